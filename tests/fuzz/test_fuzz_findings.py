"""What the fuzzing found, each kept as a plain test (the mutation named in the test).

Every one returned a value the intact capture does not have before it was fixed.
"""

from __future__ import annotations

import pytest
from corpus import LINUX, SWITCH, _body
from mutate import duplicate_line

from labtest.errors import ParseError
from labtest.parsing import lookup


def linux(path: str) -> str:
    return _body(LINUX / path)


def line_of(text: str, needle: str) -> int:
    """0-based index of the first line holding ``needle``."""
    return next(i for i, ln in enumerate(text.splitlines()) if needle in ln)


def test_ethtool_m_cut_after_a_wrapped_identifier_is_refused_not_half_a_name():
    text = linux("ethtool_module/cmis_arista_qdd400g_xdr4_netdev.txt")
    parse = lookup("linux", "ethtool -m")
    assert parse(text).identifier.startswith("QSFP-DD Double Density 8X")
    first_line = text[: text.index("\n") + 1]  # "Identifier : 0x18 (QSFP-DD Double Density"
    with pytest.raises(ParseError, match="unbalanced parentheses"):
        parse(first_line)
    with pytest.raises(ParseError, match="unbalanced parentheses"):
        parse(duplicate_line(text, 1))  # the wrapped continuation line twice


def test_ethtool_m_capture_ending_in_the_transceiver_type_list_leaves_media_type_missing():
    text = linux("ethtool_module/sff8636_mellanox_aoc_sonic_design.txt")
    parse = lookup("linux", "ethtool -m")
    assert parse(text).media_type and ";" in parse(text).media_type
    lines = text.splitlines(keepends=True)
    first_type = line_of(text, "Transceiver type")
    assert parse("".join(lines[: first_type + 1])).media_type is None


def test_nccl_failure_line_pasted_twice_is_one_failure():
    text = linux("nccl/gh200_all_reduce_wrong_nonzero.txt")
    parse = lookup("linux", "all_reduce_perf")
    twice = duplicate_line(text, line_of(text, "gpu-1-7 pid 2448661: Test failure"))
    assert parse(twice).failures == parse(text).failures


def test_ibv_devinfo_port_section_twice_is_refused():
    text = linux("rdma/ibv_devinfo_mlx4_two_ports.txt")
    with pytest.raises(ParseError, match="port mlx4_0/1 twice"):
        lookup("linux", "ibv_devinfo")(duplicate_line(text, line_of(text, "port:   1")))


def test_show_gids_row_twice_is_refused():
    text = linux("rdma/show_gids_mlx5_bond.txt")
    with pytest.raises(ParseError, match="GID mlx5_bond_0/1/1 twice"):
        lookup("linux", "show_gids")(duplicate_line(text, line_of(text, "mlx5_bond_0\t1\t1\t")))


def test_rdma_statistic_link_line_twice_is_refused_not_shifted():
    text = linux("rdma/rdma_stat_show_four_links.txt")
    with pytest.raises(ParseError, match="mlx5_0/1 twice"):
        lookup("linux", "rdma statistic")(duplicate_line(text, line_of(text, "link mlx5_0/1")))


def test_show_counters_needs_its_header_so_ethtool_stats_is_refused():
    with pytest.raises(ParseError, match="hw counters"):
        lookup("linux", "show_counters")(linux("ethtool_stats/ethq_mlx5_core_old_names.txt"))


def test_ethtool_stats_does_not_read_json_or_nxos_lldp_lines():
    parse = lookup("linux", "ethtool -S")
    with pytest.raises(ParseError):
        parse('{\n  "interfaces": {\n    "Ethernet1": {\n      "inOctets": 5\n    }\n  }\n}\n')
    with pytest.raises(ParseError):
        parse(_body(SWITCH / "nxos/show_lldp_neighbors__ntc_n9k.txt"))


def test_sonic_histogram_header_twice_is_refused_not_filed_under_unknown():
    text = _body(SWITCH / "sonic/fec_histogram__pr4523_gearbox_line.txt")
    parse = lookup("sonic", "show interfaces counters fec-histogram")
    assert list(parse(text)) == ["Ethernet0 Line"]
    header = line_of(text, "Symbol Errors Per Codeword")
    with pytest.raises(ParseError, match="header repeated"):
        parse(duplicate_line(text, header))


def test_sonic_show_version_cut_before_model_number_does_not_report_the_hwsku():
    text = _body(SWITCH / "sonic/show_version__cmdref_sn2700.txt")
    parse = lookup("sonic", "show version")
    assert parse(text).model == "MSN2700-CS2FO"
    cut = "".join(text.splitlines(keepends=True)[: line_of(text, "HwSKU") + 1])
    assert parse(cut).model is None  # missing, not the HwSKU in its place


def test_sonic_eeprom_cut_in_the_port_header_is_refused_not_absent():
    text = _body(SWITCH / "sonic/eeprom_dom__sfp_test_sff8636.txt")
    with pytest.raises(ParseError, match="cut mid-line"):
        lookup("sonic", "show interfaces transceiver eeprom --dom")(
            text[: text.index("SFP EEPROM dete") + len("SFP EEPROM dete")]
        )
