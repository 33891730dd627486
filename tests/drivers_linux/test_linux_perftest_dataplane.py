"""The Linux driver types perftest's RDMA completion errors as DataplaneFailed (a product
failure of that run); any other failed command stays plain infrastructure."""

from __future__ import annotations

from labtest.drivers.linux.perftest import dataplane_failed
from labtest.errors import CommandFailed, DataplaneFailed, TransportTimeout


def test_a_client_completion_error_is_typed_with_its_line():
    raw = " Completion with error at client\n Failed status 12: wr_id 0 syndrom 0x81\n"
    exc = CommandFailed("host1", "'ib_write_bw ...' exited 1: ...", raw=raw)
    exc.add_note("stopping a perftest server failed as well: x")
    failed = dataplane_failed(exc)
    assert isinstance(failed, DataplaneFailed) and isinstance(failed, CommandFailed)
    assert (failed.device, failed.evidence) == ("host1", "Completion with error at client")
    assert str(failed) == str(exc) and failed.raw == raw
    assert failed.__notes__ == ["stopping a perftest server failed as well: x"]


def test_the_servers_lost_exchange_is_typed_too():
    raw = " ethernet_read_keys: Couldn't read remote address\n"
    failed = dataplane_failed(CommandFailed("host2", "exited 1", raw=raw))
    assert failed is not None
    assert failed.evidence == "ethernet_read_keys: Couldn't read remote address"


def test_a_refused_connection_and_a_timeout_are_not_the_data_plane():
    assert dataplane_failed(CommandFailed("host1", "exited 1: Couldn't connect")) is None
    assert dataplane_failed(TransportTimeout("host1", "no answer")) is None
