"""nccl-tests parser against real outputs: current and older layouts, #wrong gate."""

from __future__ import annotations

import pytest

from labtest.drivers.linux.parsers.nccl import parse_nccl_tests
from labtest.errors import ParseError
from labtest.parsing import lookup, to_jsonable


def _row(result, size):
    return next(r for r in result.rows if r.size_bytes == size)


def test_current_layout_with_nonzero_wrong(sample):
    r = parse_nccl_tests(sample("nccl/gh200_all_reduce_wrong_nonzero.txt"))
    assert r.collective == "all_reduce_perf" and r.layout == "wrong"
    assert [x.size_bytes for x in r.rows] == [2**n for n in range(3, 28)]
    bad = _row(r, 1048576)
    assert (bad.count, bad.type, bad.redop, bad.root) == (262144, "float", "sum", -1)
    assert (bad.out_of_place.time_us, bad.out_of_place.busbw_gbs, bad.out_of_place.wrong) == (
        477.32,
        2.20,
        96,
    )
    assert (bad.in_place.time_us, bad.in_place.algbw_gbs, bad.in_place.wrong) == (492.81, 2.13, 32)
    assert _row(r, 134217728).in_place.busbw_gbs == 22.80
    assert (r.out_of_bounds, r.avg_busbw_gbs) == (4, 4.79995)
    assert r.corrupted
    assert r.failures == [
        ".. gpu-1-1 pid 662195: Test failure common.cu:1189",
        ".. gpu-1-7 pid 2448661: Test failure common.cu:1189",
    ]


def test_wrong_counts_in_g_notation_and_noise_in_table(sample):
    r = parse_nccl_tests(sample("nccl/inc_rtx3090_all_reduce_wrong_sci.txt"))
    assert len(r.rows) == 27  # 8 B .. 512 MiB; "Connect QP" skipped
    assert _row(r, 8).out_of_place.wrong == 4
    assert _row(r, 1048576).in_place.wrong == 524288
    assert _row(r, 2097152).out_of_place.wrong == 1048580  # printed 1.04858e+06
    assert _row(r, 536870912).in_place.wrong == 268435000  # printed 2.68435e+08
    assert _row(r, 536870912).out_of_place.time_us == 72488
    assert (r.out_of_bounds, r.avg_busbw_gbs, r.corrupted) == (108, 3.02663, True)


def test_alltoall_in_place_wrong_is_na(sample):
    r = parse_nccl_tests(sample("nccl/issue287_alltoall_na.txt"))
    (row,) = r.rows
    assert (row.size_bytes, row.count, row.redop, row.root) == (33554432, 8388608, "none", -1)
    assert row.out_of_place.algbw_gbs == 1715.44 and row.out_of_place.wrong == 0
    assert row.in_place.algbw_gbs == 43046.10 and row.in_place.wrong is None
    assert (r.out_of_bounds, r.avg_busbw_gbs, r.corrupted) == (0, 0.0, False)


def test_old_layout_with_error_column_and_nccl_info_line(sample):
    r = parse_nccl_tests(sample("nccl/azureml_k80_all_reduce_old_error.txt"))
    assert r.layout == "error" and r.collective is None
    assert len(r.rows) == 7
    row = _row(r, 2147483648)
    assert (row.count, row.redop, row.root) == (536870912, "sum", None)
    assert (row.out_of_place.time_us, row.out_of_place.busbw_gbs) == (1258554, 2.56)
    assert (row.out_of_place.wrong, row.out_of_place.error) == (None, 2e-07)
    assert (r.out_of_bounds, r.avg_busbw_gbs, r.corrupted) == (0, 2.54225, False)


def test_old_layout_two_nodes_efa(sample):
    r = parse_nccl_tests(sample("nccl/aws_efa_all_reduce_old_nccl_info.txt"))
    assert [x.size_bytes for x in r.rows] == [2**n for n in range(3, 32)]
    row = _row(r, 1073741824)
    assert (row.out_of_place.time_us, row.out_of_place.algbw_gbs, row.in_place.busbw_gbs) == (
        413610,
        2.60,
        2.59,
    )
    assert (r.out_of_bounds, r.avg_busbw_gbs) == (0, 1.16154)


def test_oldest_layout_without_redop_and_failed_bounds(sample):
    r = parse_nccl_tests(sample("nccl/dgx2_all_gather_old_failed.txt"))
    assert len(r.rows) == 31
    assert r.rows[0].size_bytes == 0 and r.rows[0].redop is None and r.rows[0].root is None
    row = _row(r, 4294967280)
    assert (row.count, row.out_of_place.error, row.in_place.error) == (89478485, 1.0, 1.0)
    assert row.in_place.algbw_gbs == 111.99
    assert (r.out_of_bounds, r.avg_busbw_gbs, r.corrupted) == (4, 30.2993, True)


def test_old_layout_with_root_column(sample):
    r = parse_nccl_tests(sample("nccl/dgx2_broadcast_old_root.txt"))
    row = _row(r, 8589934592)
    assert (row.root, row.redop, row.out_of_place.time_us, row.in_place.busbw_gbs) == (
        0,
        None,
        70321,
        122.07,
    )
    assert r.avg_busbw_gbs == 41.2456


def test_json_shape_keeps_the_issue_key_names(sample):
    data = to_jsonable(parse_nccl_tests(sample("nccl/gh200_all_reduce_wrong_nonzero.txt")))
    assert {"rows", "avg_busbw_gbs", "out_of_bounds"} <= set(data)
    assert {"size_bytes", "count", "type", "redop", "root", "out_of_place", "in_place"} <= set(
        data["rows"][0]
    )
    assert {"time_us", "algbw_gbs", "busbw_gbs", "wrong"} <= set(data["rows"][0]["in_place"])


def test_failed_run_without_a_table_raises(sample):
    text = (
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor)\n"
        "gpu-1-1: Test CUDA failure common.cu:1304 'CUDA-capable device(s) is/are busy'\n"
        " .. gpu-1-1 pid 3617715: Test failure common.cu:1189\n"
    )  # nccl-tests#369, first report: the run dies before the table
    with pytest.raises(ParseError, match="no nccl-tests table header") as info:
        parse_nccl_tests(text)
    assert info.value.raw == text


@pytest.mark.parametrize(
    "text, message",
    [
        ("Segmentation fault (core dumped)\n", "no nccl-tests table header"),
        ("#  size count type redop time algbw busbw #wrong\n", "unknown nccl-tests column layout"),
        (
            "#       size         count      type   redop    root     time   algbw   busbw #wrong"
            "     time   algbw   busbw #wrong\n# Out of bounds values : 0 OK\n",
            "no result rows",
        ),
    ],
)
def test_garbage_raises_parse_error(text, message):
    with pytest.raises(ParseError, match=message) as info:
        parse_nccl_tests(text)
    assert info.value.raw == text


def test_two_runs_in_one_output_are_refused(sample):
    one = sample("nccl/dgx2_broadcast_old_root.txt")
    with pytest.raises(ParseError, match="2 nccl-tests tables"):
        parse_nccl_tests(one + one)


def test_every_collective_resolves():
    for command in (
        "all_reduce_perf -b 8 -e 128M -f 2 -g 1",
        "alltoall_perf",
        "reduce_scatter_perf",
    ):
        assert lookup("linux", command).__wrapped__ is parse_nccl_tests


def test_a_row_glued_to_the_line_before_it_is_refused_not_dropped(sample):
    # a lost line end (a mangled paste) puts the first result row behind an INFO line: the
    # row must not vanish from the result while the rest still parses
    text = sample("nccl/azureml_k80_all_reduce_old_error.txt")
    glued = text.replace("Launch mode Parallel\n", "Launch mode Parallel ", 1)
    assert glued != text
    with pytest.raises(ParseError, match="glued to other text"):
        parse_nccl_tests(glued)
