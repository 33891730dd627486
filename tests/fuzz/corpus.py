"""Every stored real sample with the command whose parser reads it.

Switch samples live under ``tests/drivers/samples/<driver>/<slug>__<name>.txt``
(the slug -> command map is the one ``test_switch_samples`` checks); Linux
samples under ``tests/drivers_linux/samples/<tool>/``, where the tool folder,
the file name or the tool's own banner names the command. The first lines
(``# source:``, ``# note:``) are dropped.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
SWITCH = TESTS / "drivers" / "samples"
LINUX = TESTS / "drivers_linux" / "samples"
_HEADER = ("# source:", "# note:")


@dataclass(frozen=True)
class Sample:
    driver: str
    command: str
    name: str  # driver/file stem, for test ids
    text: str


def _body(path: Path) -> str:
    lines = path.read_text().splitlines(keepends=True)
    while lines and lines[0].startswith(_HEADER):
        lines.pop(0)
    return "".join(lines)


def _switch_commands() -> dict[str, dict[str, str]]:
    sys.path.insert(0, str(TESTS / "drivers"))
    try:
        from test_switch_samples import COMMANDS
    finally:
        sys.path.remove(str(TESTS / "drivers"))
    return COMMANDS


_LINUX_FOLDERS = {
    "ethtool_module": "ethtool -m",
    "ethtool_stats": "ethtool -S",
    "ip_link": "ip -j link",
    "traceroute": "traceroute",
}
_RDMA_PREFIXES = {
    "rdma_link": "rdma link",
    "rdma_stat": "rdma statistic",
    "show_gids": "show_gids",
    "show_counters": "show_counters",
    "ibv_devinfo": "ibv_devinfo",
}
_PERFTEST_OPS = {"RDMA_Write": "ib_write", "RDMA_Read": "ib_read", "Send": "ib_send"}
_PERFTEST_OPS["Atomic"] = "ib_atomic"
_COLLECTIVES = ("all_reduce", "all_gather", "alltoall", "broadcast", "reduce_scatter", "reduce")


def _linux_command(folder: str, stem: str, text: str) -> str | None:
    if folder in _LINUX_FOLDERS:
        return _LINUX_FOLDERS[folder]
    if folder == "rdma":
        return next((c for p, c in _RDMA_PREFIXES.items() if stem.startswith(p)), None)
    if folder == "nccl":
        name = next((c for c in _COLLECTIVES if f"_{c}_" in f"_{stem}_"), None)
        return f"{name}_perf" if name else None
    if folder.startswith("perftest_"):
        kind = folder.removeprefix("perftest_")
        m = re.search(r"^\s*(RDMA_Write|RDMA_Read|Send|Atomic)\b", text, re.M) or re.search(
            r'"test":\s*"(RDMA_Write|RDMA_Read|Send|Atomic)', text
        )
        return f"{_PERFTEST_OPS[m.group(1)]}_{kind}" if m else None
    return None


def samples() -> list[Sample]:
    out: list[Sample] = []
    for driver, slugs in _switch_commands().items():
        for path in sorted((SWITCH / driver).glob("*.txt")):
            command = slugs.get(path.stem.split("__")[0])
            if command:
                out.append(Sample(driver, command, f"{driver}/{path.stem}", _body(path)))
    for path in sorted(LINUX.rglob("*.txt")):
        text = _body(path)
        command = _linux_command(path.parent.name, path.stem, text)
        if command:
            out.append(Sample("linux", command, f"linux/{path.stem}", text))
    return out
