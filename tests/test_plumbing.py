"""kraft_replay.plumbing: how the commands show values in a table, and the aligned columns."""

from __future__ import annotations

import pytest

from kraft_replay.plumbing import cell, table_lines


def test_cell_shows_values_as_a_table_does() -> None:
    assert cell(None) == ""
    assert (cell(True), cell(False)) == ("yes", "no")
    assert cell([1, [2, 3]]) == "1,2,3"
    assert cell((4, None, False)) == "4,,no"
    assert cell({"a": 1, "b": [1]}) == '{"a":1,"b":[1]}'
    assert (cell(5), cell("x")) == ("5", "x")


def test_cell_shows_rows_as_compact_json() -> None:
    class Row:  # what Spark's Row offers
        def asDict(self, recursive: bool = False) -> dict[str, object]:
            assert recursive
            return {"broker": 1, "dirs": ["a"]}

    assert cell(Row()) == '{"broker":1,"dirs":["a"]}'


def test_table_lines_align_columns_left_or_right() -> None:
    lines = list(table_lines(["ID", "NAME", "N"], [[1, "alpha", 10], [22, None, True]], width=80,
                             right=[True, False, True]))
    assert lines == ["ID  NAME     N",
                     " 1  alpha   10",
                     "22         yes"]


def test_table_lines_cut_the_widest_columns_to_fit() -> None:
    assert list(table_lines(["A", "B"], [["x" * 20, "y" * 10]], width=20)) == ["A          B",
                                                                               "xxxxxxxx…  yyyyyyyy…"]


def test_table_lines_of_no_rows_are_the_header() -> None:
    assert list(table_lines(["A", "LONG"], [], width=80, right=[True, False])) == ["A  LONG"]
    assert list(table_lines([], [(), ()])) == ["", "", ""]  # a SQL statement without columns: one line a row


def test_table_lines_refuse_rows_of_another_width() -> None:
    with pytest.raises(ValueError):
        list(table_lines(["A", "B"], [[1, 2], [3]]))
    with pytest.raises(ValueError, match="2 headers, rows of 3 values"):
        list(table_lines(["A", "B"], [[1, 2, 3]]))
