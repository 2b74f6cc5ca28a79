from course_lib.results import load_results, results_table, save_results


def test_round_trip_and_table(tmp_path, capsys):
    save_results("part1", tmp_path, model="GRU", best_val_loss=0.51234, hidden_size=32)
    save_results("part2", tmp_path, model="attention", exact_match=0.97)
    (tmp_path / "broken.json").write_text("{")
    results = load_results(tmp_path)
    assert "skipping" in capsys.readouterr().out
    assert results["part1"] == {"model": "GRU", "best_val_loss": 0.51234, "hidden_size": 32}
    table = results_table(results, columns=("model", "best_val_loss", "exact_match"))
    lines = table.splitlines()
    assert lines[0] == "| name | model | best_val_loss | exact_match |"
    assert lines[2] == "| part1 | GRU | 0.512 |  |" and len(lines) == 4


def test_empty_table():
    assert "No results yet" in results_table({})
