"""Issue 15's examples, each as a plain test: the truth, or a clear refusal.

The loader examples (non-UTF-8 testbed, binary secret file, recursive alias,
list as key, alias bomb) are in ``tests/core/test_testbed.py``; the valid
captures that used to be refused (indented ``transceiver pm``, one-direction
``show pfc counters``) in ``tests/drivers/test_sonic_parsers.py``.
"""

from __future__ import annotations

import json

import pytest
from corpus import LINUX, SWITCH, _body

from labtest.cli import main
from labtest.errors import ParseError
from labtest.parsing import lookup, to_jsonable


def linux(path: str) -> str:
    return _body(LINUX / path)


def switch(path: str) -> str:
    return _body(SWITCH / path)


def cut_after(text: str, marker: str) -> str:
    """``text`` cut just after ``marker`` (a session dropped mid-line)."""
    return text[: text.index(marker) + len(marker)]


# --- silently wrong values ---------------------------------------------------------


def test_ethtool_stats_cut_mid_line_is_not_out_octets_5():
    text = linux("ethtool_stats/ethq_mlx5_core_old_names.txt")
    assert lookup("linux", "ethtool -S")(text)["out_octets"] == 5834192580
    with pytest.raises(ParseError, match="no line end") as info:
        lookup("linux", "ethtool -S")(cut_after(text, "out_octets: 5"))
    assert info.value.line == text[: text.index("out_octets")].count("\n") + 1


def test_pfcwd_config_cut_is_not_restoration_time_1_nor_a_port_ethern():
    text = switch("sonic/pfcwd_config__pfcwd_test_vectors_history.txt")
    parse = lookup("sonic", "show pfcwd config")
    assert parse(text)["Ethernet0"].restoration_time_ms == 101
    with pytest.raises(ParseError, match="cut mid-line"):
        parse(cut_after(text, "101")[:-2])  # "... 102   1"
    with pytest.raises(ParseError, match="cut mid-line"):
        parse(text[: text.index("Ethernet8") + len("Ethern")])


def test_string_cut_short_is_refused_not_physical_state_di():
    text = linux("rdma/rdma_link_old_format_i40iw.txt")
    parse = lookup("linux", "rdma link")
    assert any(d.physical_state == "DISABLED" for d in parse(text))
    with pytest.raises(ParseError, match="no line end"):
        parse(cut_after(text, "physical_state DI"))


def test_duplicated_port_row_is_refused_not_last_wins():
    text = switch("sonic/pfcwd_config__pfcwd_test_vectors_history.txt")
    row = "Ethernet4      drop               600                 600    disable\n"
    twice = text.replace(row, row + row.replace("600    disable", "900    disable"))
    with pytest.raises(ParseError, match="duplicated row for 'Ethernet4'") as info:
        lookup("sonic", "show pfcwd config")(twice)
    assert info.value.line == 6


def test_ip_j_link_reads_every_json_document_and_refuses_trailing_text():
    text = linux("ip_link/netdev_ip_s_s_j_link_veth.txt")
    parse = lookup("linux", "ip -j link")
    one = parse(text)
    start = text.index("\n[") + 1
    doc = text[start:].strip()
    second = json.loads(doc)
    for d in second:
        d["ifname"] += "-b"
    both = parse(doc + "\n" + json.dumps(second) + "\n")
    assert len(both) == 2 * len(one)
    with pytest.raises(ParseError, match="text after the JSON document"):
        parse(doc + "\n{not json\n")


# --- another command's output --------------------------------------------------------


def test_ib_read_bw_output_is_not_ethtool_stats():
    text = linux("perftest_bw/mlx4_read_bw_sweep_cpufreq.txt")
    with pytest.raises(ParseError, match="looks like 'ib_read_bw' output, not 'ethtool -S'"):
        lookup("linux", "ethtool -S")(text)


def test_ib_write_lat_output_is_not_ib_read_lat():
    text = linux("perftest_lat/mlx4_write_lat_sweep_percentiles.txt")
    with pytest.raises(ParseError, match="looks like 'ib_write_lat' output, not 'ib_read_lat'"):
        lookup("linux", "ib_read_lat")(text)
    assert lookup("linux", "ib_write_lat")(text).rows


def test_alltoall_perf_output_is_not_all_reduce_perf():
    text = linux("nccl/issue287_alltoall_na.txt")
    with pytest.raises(ParseError, match="looks like 'alltoall_perf' output"):
        lookup("linux", "all_reduce_perf")(text)
    unnamed = "\n".join(ln for ln in text.splitlines() if "alltoall_perf" not in ln) + "\n"
    with pytest.raises(ParseError, match="without reduction"):
        lookup("linux", "all_reduce_perf -b 8 -e 128M")(unnamed)


def test_show_interfaces_json_is_not_eos_transceiver_data():
    text = switch("eos/show_interfaces_json__veoslab_4_33.txt")
    try:
        record = lookup("eos", "show interfaces transceiver | json")(text)
    except ParseError:
        return
    pytest.xfail(
        f"EOS parse_transceiver (drivers/eos, H2) accepted 'show interfaces | json': {record!r:.80}"
    )


# --- bytes in, never a traceback ----------------------------------------------------------


def test_latin1_capture_is_a_located_refusal_not_a_traceback(tmp_path, capsys):
    text = switch("sonic/lldp_table__cmdref.txt")
    path = tmp_path / "lldp.txt"
    data = text.encode().replace(b"Ethernet", b"Eth\xe9rnet", 1)
    path.write_bytes(data)
    assert main(["parse", "sonic", "show lldp table", str(path)]) == 1
    err = capsys.readouterr().err
    line = data[: data.index(b"\xe9")].count(b"\n") + 1
    assert f"{path}:{line}:" in err and "not UTF-8 (byte 0xe9)" in err
    assert f"line {line} column" in err and "Traceback" not in err


def test_missing_capture_file_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["parse", "linux", "ethtool -S", str(tmp_path / "nope.txt")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"labtest parse: {tmp_path / 'nope.txt'}: no such file"
    assert main(["parse", "linux", "ethtool -S", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_a_parser_given_bytes_decodes_them_by_the_policy():
    text = linux("ethtool_stats/ethq_mlx5_core_old_names.txt")
    parse = lookup("linux", "ethtool -S")
    assert to_jsonable(parse(text.encode())) == to_jsonable(parse(text))
    with pytest.raises(ParseError, match="undecodable byte"):
        parse(text.encode().replace(b"out_octets", b"out_\xffctets"))


# --- linear time (the figures are in bench/parsers.py) ---------------------------------------


def test_many_small_tables_parse_in_one_pass():
    """20 000 one-row tables: the old _tables copied the line list per table (quadratic)."""
    block = (
        "     PORT    ACTION    DETECTION TIME    RESTORATION TIME\n"
        "---------  --------  ----------------  ------------------\n"
        "Ethernet{n}      drop               200                 200\n\n"
    )
    text = "".join(block.format(n=n) for n in range(20_000))
    config = lookup("sonic", "show pfcwd config")(text)
    assert len(config) == 20_000 and config["Ethernet19999"].restoration_time_ms == 200


def test_ethtool_m_saved_without_its_last_newline_is_read_when_the_line_ends_in_its_unit():
    # issue 35 item 5: a capture a tool saved without the final newline was refused as
    # "cut mid-line" although its last line ends in its unit and cannot be cut in its value
    text = linux("ethtool_module/sff8636_mellanox_sr4_cumulus.txt")
    parse = lookup("linux", "ethtool -m")
    whole = text[: text.index("\tModule voltage")] + "\tModule voltage : 3.2350 V"
    assert parse(whole).voltage_v == pytest.approx(3.235)
    with pytest.raises(ParseError, match="cut mid-line"):
        parse(whole[:-4])  # "3.23": a value cut before its unit is still refused
