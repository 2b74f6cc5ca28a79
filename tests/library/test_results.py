from course_lib.results import (
    collect,
    load_results,
    parse_lines,
    result_line,
    results_table,
    save_results,
)


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


def test_saving_prints_the_line_to_paste(tmp_path, capsys):
    save_results("part1_gru", tmp_path, model="GRU", exact_match=0.5, test_sentence="ethay")
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1] == result_line(
        "part1_gru", {"model": "GRU", "exact_match": 0.5, "test_sentence": "ethay"}
    )
    assert parse_lines("\n".join(printed)) == {
        "part1_gru": {"model": "GRU", "exact_match": 0.5, "test_sentence": "ethay"}
    }


def test_pasted_lines_survive_spaces_and_damage(capsys):
    text = (
        "  " + result_line("part2_x", {"a": 1}) + "   \n"
        "some other text\n"
        "A3-RESULT part9 {not json\n" + result_line("part1_y", {"b": "two words"})
    )
    assert parse_lines(text) == {"part2_x": {"a": 1}, "part1_y": {"b": "two words"}}
    assert "damaged" in capsys.readouterr().out


def test_collect_prefers_pasted_lines_to_files(tmp_path):
    save_results("part1", tmp_path, verbose=False, model="from the file")
    save_results("part2", tmp_path, verbose=False, model="only in the file")
    got = collect(result_line("part1", {"model": "pasted"}), tmp_path)
    assert got == {"part1": {"model": "pasted"}, "part2": {"model": "only in the file"}}
    assert collect("", tmp_path / "nothing here") == {}


def test_empty_table():
    assert "No results yet" in results_table({})
