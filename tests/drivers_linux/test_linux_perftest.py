"""perftest bandwidth and latency parsers against real published outputs."""

from __future__ import annotations

import pytest

from labtest.drivers.linux.parsers.perftest import parse_perftest_bw, parse_perftest_lat
from labtest.errors import ParseError
from labtest.parsing import lookup, to_jsonable

MIB_S_TO_GBPS = 2**20 * 8 / 1e9


def _row(result, size):
    return next(r for r in result.rows if r.bytes == size)


# --- bandwidth -----------------------------------------------------------------


def test_mlx4_read_bw_sweep_survives_cpu_warning_inside_table(sample):
    r = parse_perftest_bw(sample("perftest_bw/mlx4_read_bw_sweep_cpufreq.txt"))
    assert (r.test, r.device, r.link_type, r.qps, r.mtu_bytes) == (
        "RDMA_Read BW Test",
        "mlx4_0",
        "IB",
        1,
        2048,
    )
    assert r.bw_unit == "MB/sec" and not r.server_side and not r.bidirectional
    assert [x.bytes for x in r.rows] == [2**n for n in range(1, 24)]  # 2 B .. 8 MiB
    row = _row(r, 65536)
    assert (row.iterations, row.bw_peak, row.bw_average, row.msg_rate_mpps) == (
        20000,
        3659.15,
        3659.01,
        0.058544,
    )
    assert row.bw_average_gbps == pytest.approx(3659.01 * MIB_S_TO_GBPS)  # MB here is MiB
    assert row.bw_from_msg_rate_gbps == pytest.approx(30.69, abs=0.01)
    assert _row(r, 2097152).bw_average == 3667.10  # the row right after the warning
    assert r.warnings == ["perftest reported conflicting CPU frequencies 1 time(s)"]


def test_ionic_bidirectional_server_side_in_gbits(sample):
    r = parse_perftest_bw(sample("perftest_bw/ionic_write_bw_bidir_server.txt"))
    assert r.server_side and r.bidirectional
    assert (r.device, r.qps, r.gid_index, r.mtu_bytes, r.link_type) == (
        "ionic_7",
        4,
        1,
        4096,
        "Ethernet",
    )
    assert r.bw_unit == "Gb/sec" and r.warnings == []
    assert _row(r, 2).bw_average == 0.146472  # six decimals below 1 Gb/s
    assert _row(r, 65536).bw_average_gbps == 775.03
    assert r.best_average_gbps == 779.21  # 2 x 400G, both directions


def test_server_side_unit_quirk_is_flagged_not_converted(sample):
    r = parse_perftest_bw(sample("perftest_bw/deepops_oci_write_bw_server_unit_quirk.txt"))
    row = r.rows[0]
    assert r.server_side and r.bw_unit == "MB/sec"
    assert (row.bytes, row.iterations, row.bw_average, row.msg_rate_mpps) == (
        65536,
        1101500,
        96.25,
        0.183585,
    )
    assert row.bw_average_gbps is None and row.bw_peak_gbps is None
    assert row.bw_from_msg_rate_gbps == pytest.approx(96.25, abs=0.01)
    assert len(r.warnings) == 1 and "contradicts the message rate" in r.warnings[0]
    assert "look like Gb/sec" in r.warnings[0]


def test_bnxt_three_qps_duration_mode_client(sample):
    r = parse_perftest_bw(sample("perftest_bw/bnxt_write_bw_3qp_duration_client.txt"))
    assert (r.device, r.qps, r.gid_index, r.mtu_bytes) == ("bnxt_re0", 3, 3, 1024)
    assert not r.server_side
    row = r.rows[0]
    assert (row.bytes, row.iterations, row.bw_peak, row.bw_average) == (65536, 4159603, 0.0, 363.47)
    assert row.bw_from_msg_rate_gbps == pytest.approx(363.47, abs=0.01)


def test_post_list_output_with_tabs(sample):
    r = parse_perftest_bw(sample("perftest_bw/issue273_post_list_8b.txt"))
    assert r.test == "RDMA_Write Post List BW Test"
    assert (r.device, r.link_type, r.gid_index, r.connection_type) == ("ib0", "Ethernet", 2, "RC")
    row = r.rows[0]
    assert (row.bytes, row.iterations, row.bw_average, row.msg_rate_mpps) == (
        8,
        224958464,
        0.48,
        7.498617,
    )
    assert r.warnings == []


def test_rxe_send_bw_server_keeps_tool_warning(sample):
    r = parse_perftest_bw(sample("perftest_bw/rxe_send_bw_server.txt"))
    assert r.server_side and r.test == "Send BW Test"
    assert r.rows[0].bw_average == 3.06 and r.rows[0].msg_rate_mpps == 0.000049
    assert r.warnings == ["WARNING: BW peak won't be measured in this run."]


def test_out_json_infers_the_unit_from_the_message_rate(sample):
    r = parse_perftest_bw(sample("perftest_bw/out_json_mlx5_11.json.txt"))
    assert (r.test, r.device, r.qps, r.mtu_bytes, r.gid_index) == (
        "RDMA_Write_BW_Test",
        "mlx5_11",
        1,
        1024,
        1,
    )
    assert r.bw_unit == "MiB/sec"
    row = r.rows[0]
    assert (row.bytes, row.iterations, row.bw_peak, row.bw_average) == (
        65536,
        5000,
        5293.52,
        2229.27,
    )
    assert row.bw_average_gbps == pytest.approx(18.70, abs=0.01)
    assert "inferred" in r.warnings[0]


def test_out_json_with_bare_words_and_trailing_comma():
    text = (
        '{"test_info": {"test": RDMA_Write_BW_Test, "Device": mlx5_0, "Mtu": 4096,},\n'
        ' "results": {"MsgSize": 65536, "n_iterations": 1000, "BW_peak": 98.1,'
        ' "BW_average": 97.9, "MsgRate": 0.186737,}}\n'
    )
    r = parse_perftest_bw(text)
    assert r.device == "mlx5_0" and r.bw_unit == "Gb/sec" and r.rows[0].bw_average_gbps == 97.9


def test_bw_json_shape_keeps_the_issue_key_names(sample):
    data = to_jsonable(
        parse_perftest_bw(sample("perftest_bw/bnxt_write_bw_3qp_duration_client.txt"))
    )
    for key in ("test", "device", "link_type", "qps", "mtu_bytes", "bw_unit", "rows", "warnings"):
        assert key in data
    assert set(data["rows"][0]) >= {
        "bytes",
        "iterations",
        "bw_peak",
        "bw_average",
        "msg_rate_mpps",
        "bw_peak_gbps",
        "bw_average_gbps",
    }


@pytest.mark.parametrize(
    "text, message",
    [
        ("bash: ib_write_bw: command not found\n", "no perftest bandwidth table"),
        (
            " Couldn't connect to 10.0.0.1:18515\n"
            "Unable to open file descriptor for socket connection",
            "no perftest bandwidth table",
        ),
        (
            "                    RDMA_Write BW Test\n #bytes     #iterations    BW peak[Gb/sec]"
            "    BW average[Gb/sec]   MsgRate[Mpps]\n",
            "no result rows",
        ),
        ('{"test_info": {}, "results": {"MsgSize": 64}}', "lacks a field"),
        ("{not json at all", "not JSON"),
    ],
)
def test_bw_garbage_raises_parse_error_with_raw_text(text, message):
    with pytest.raises(ParseError, match=message) as info:
        parse_perftest_bw(text)
    assert info.value.raw == text


def test_bw_parser_refuses_latency_and_two_runs(sample):
    with pytest.raises(ParseError, match="latency output"):
        parse_perftest_bw(sample("perftest_lat/dgx_spark_write_lat_rdma_cm.txt"))
    one = sample("perftest_bw/issue273_post_list_8b.txt")
    with pytest.raises(ParseError, match="2 perftest runs"):
        parse_perftest_bw(one + one)


# --- latency -------------------------------------------------------------------


def test_write_lat_sweep_with_percentiles(sample):
    r = parse_perftest_lat(sample("perftest_lat/mlx4_write_lat_sweep_percentiles.txt"))
    assert (r.test, r.device, r.link_type, r.mtu_bytes) == (
        "RDMA_Write Latency Test",
        "mlx4_0",
        "IB",
        2048,
    )
    assert len(r.rows) == 23
    first = r.rows[0]
    assert (first.bytes, first.iterations, first.t_min_us, first.t_max_us) == (2, 20000, 0.88, 6.84)
    assert (first.t_typical_us, first.t_avg_us, first.t_stdev_us) == (0.98, 1.03, 0.20)
    assert (first.p99_us, first.p99_9_us, first.tps_average) == (1.21, 5.42, None)
    last = r.rows[-1]
    assert (last.bytes, last.t_typical_us, last.p99_us, last.p99_9_us) == (
        8388608,
        2302.01,
        2327.01,
        2335.48,
    )


def test_atomic_lat_with_cpu_warnings_between_header_and_row(sample):
    r = parse_perftest_lat(sample("perftest_lat/mlx4_atomic_lat_cpufreq.txt"))
    assert r.test == "Atomic FETCH_AND_ADD Latency Test"
    assert [(x.bytes, x.t_typical_us, x.p99_9_us) for x in r.rows] == [(8, 2.34, 10.20)]
    assert r.warnings == ["perftest reported conflicting CPU frequencies 2 time(s)"]


def test_dgx_spark_rdma_cm_latency(sample):
    r = parse_perftest_lat(sample("perftest_lat/dgx_spark_write_lat_rdma_cm.txt"))
    row = r.rows[0]
    assert r.device == "rocep1s0f1" and r.mtu_bytes == 1024
    assert (row.iterations, row.t_min_us, row.t_typical_us, row.p99_us, row.p99_9_us) == (
        1000,
        1.42,
        1.47,
        1.57,
        1.93,
    )


def test_server_side_latency_with_glued_columns_is_split(sample):
    r = parse_perftest_lat(sample("perftest_lat/rxe_send_lat_server_glued.txt"))
    row = r.rows[0]
    assert r.server_side and r.device == "rxe0"
    assert (row.t_min_us, row.t_max_us, row.t_typical_us, row.t_avg_us) == (
        453.06,
        37330.73,
        692.41,
        928.05,
    )
    assert (row.t_stdev_us, row.p99_us, row.p99_9_us) == (2465.90, 1216.65, 37330.73)
    assert r.warnings == ["2 B: columns printed without a space were split"]


@pytest.mark.parametrize(
    "name, iterations, t_avg_us, tps",
    [
        ("mlx5_read_lat_duration_cpufreq.txt", 62078352, 2.42, 413812.77),
        ("mlx4_send_lat_duration_noise.txt", 1289984, 3.88, 128993.46),
    ],
)
def test_duration_mode_has_no_percentiles(sample, name, iterations, t_avg_us, tps):
    r = parse_perftest_lat(sample(f"perftest_lat/{name}"))
    row = r.rows[0]
    assert (row.bytes, row.iterations, row.t_avg_us, row.tps_average) == (
        2,
        iterations,
        t_avg_us,
        tps,
    )
    assert row.p99_us is None and row.p99_9_us is None and row.t_typical_us is None
    assert r.warnings == ["perftest reported conflicting CPU frequencies 2 time(s)"]


def test_lat_json_shape_keeps_the_issue_key_names(sample):
    data = to_jsonable(
        parse_perftest_lat(sample("perftest_lat/mlx5_read_lat_duration_cpufreq.txt"))
    )
    assert {"test", "device", "rows"} <= set(data)
    assert set(data["rows"][0]) >= {
        "bytes",
        "iterations",
        "t_min_us",
        "t_max_us",
        "t_typical_us",
        "t_avg_us",
        "t_stdev_us",
        "p99_us",
        "p99_9_us",
    }
    assert data["rows"][0]["p99_us"] is None


def test_lat_garbage_raises_parse_error(sample):
    with pytest.raises(ParseError, match="bandwidth output"):
        parse_perftest_lat(sample("perftest_bw/bnxt_write_bw_3qp_duration_client.txt"))
    broken = sample("perftest_lat/dgx_spark_write_lat_rdma_cm.txt").replace(
        " 1.42           1.93", " 1.42"
    )
    with pytest.raises(ParseError, match="header has 9 columns") as info:
        parse_perftest_lat(broken)
    assert info.value.raw == broken


def test_lookup_accepts_the_command_as_typed():
    typed = "ib_write_bw -d mlx5_0 -x 3 -q 4 --report_gbits 10.0.0.1"
    assert lookup("linux", typed).__wrapped__ is parse_perftest_bw
    assert lookup("linux", "ib_send_lat -d mlx5_0 -a").__wrapped__ is parse_perftest_lat
