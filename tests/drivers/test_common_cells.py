"""The fixed-width table helpers the EOS and NX-OS status parsers share."""

from labtest.drivers.common.cells import header_columns, row_cells

HEADER = "Port       Name   Status       Vlan     Duplex  Speed  Type"


def test_header_columns_start_where_each_word_starts() -> None:
    assert header_columns(HEADER) == [
        ("Port", 0), ("Name", 11), ("Status", 18), ("Vlan", 31), ("Duplex", 40),
        ("Speed", 48), ("Type", 55),
    ]  # fmt: skip


def test_row_cut_at_the_header_columns_blank_cell_and_last_to_end_of_line() -> None:
    row = "Et1               connected    1        full    100G   100GBASE-SR4 multi"
    cells = row_cells(row, header_columns(HEADER))
    assert cells["Port"] == "Et1" and cells["Name"] == "" and cells["Status"] == "connected"
    assert cells["Speed"] == "100G" and cells["Type"] == "100GBASE-SR4 multi"


def test_a_row_that_stops_early_leaves_the_rest_empty() -> None:
    cells = row_cells("Et2        uplink connected", header_columns(HEADER))
    assert cells["Name"] == "uplink" and cells["Status"] == "connected"
    assert cells["Duplex"] == cells["Speed"] == cells["Type"] == ""
