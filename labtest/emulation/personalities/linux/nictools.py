"""NIC tools of the emulated host: ``ip``, ``ethtool``, ``rdma``, ``ibv_devinfo``,
``show_gids``, ``show_counters``, each from the model through ``nic``'s text builders.

A mixin of the session's ``Shell``.
"""

from __future__ import annotations

import json
from typing import Any

from labtest.emulation.model.optics import DARK_DBM
from labtest.emulation.model.traffic.topology import TrafficSettings
from labtest.emulation.personalities.linux import module_eeprom
from labtest.emulation.personalities.linux import nic as nic_text
from labtest.emulation.personalities.linux.bash import Ctx, Output
from labtest.emulation.personalities.linux.state import HostState


class NicTools:
    host: HostState


    def _ports(self) -> list[nic_text.PortNow]:
        fabric = self.host.fabric
        fabric.now_s()  # the model is brought up to date before anything is read
        return [nic_text.port_now(fabric, self.host.name, nic) for nic in self.host.nics]

    def _port_by_netdev(self, netdev: str) -> nic_text.PortNow | None:
        nic = self.host.nic_by_netdev(netdev)
        if nic is None:
            return None
        self.host.fabric.now_s()
        return nic_text.port_now(self.host.fabric, self.host.name, nic)

    def _pfc(self) -> tuple[int, ...]:
        settings = TrafficSettings.model_validate(self.host.device.vars)
        return tuple(sorted(settings.pfc_priorities))

    def _ethtool_counters(self, now: nic_text.PortNow) -> dict[str, int]:
        return nic_text.ethtool_counters(self.host.fabric, self.host.name, now, self._pfc())

    def _ip(self, argv: list[str], ctx: Ctx) -> Output:
        words = argv[1:]
        flags: list[str] = []
        while words and words[0].startswith("-"):
            flags.append(words.pop(0).lstrip("-"))
        json_out = bool({"j", "json"} & set(flags)) or any(f.startswith("j") for f in flags)
        stats = sum(f in ("s", "stats") for f in flags)  # twice: carrier changes too
        if not words:
            return Output(stderr="Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }\n", status=255)
        obj = words[0]
        addresses = "address".startswith(obj) or obj == "a"
        if not (addresses or "link".startswith(obj)):
            return Output(stderr=f'Object "{obj}" is unknown, try "ip help".\n', status=1)
        rest = [w for w in words[1:] if w not in ("show", "list", "dev")]
        ports = self._ports()
        if rest:
            ports = [p for p in ports if p.nic.netdev == rest[0]]
            if not ports and rest[0] != "lo":
                return Output(stderr=f'Device "{rest[0]}" does not exist.\n', status=1)
        counters: dict[str, dict[str, Any]] = {}
        if stats:  # the loopback counts too (nothing crosses it here)
            counters = {p.nic.netdev: nic_text.stats64(self._ethtool_counters(p),
                                                       p.carrier_changes if stats > 1 else None)
                        for p in ports}
            idle = dict.fromkeys(("rx_bytes", "rx_packets", "tx_bytes", "tx_packets"), 0)
            counters["lo"] = nic_text.stats64(idle, 0 if stats > 1 else None)
        text = nic_text.ip_json(ports, addresses, counters)
        data = json.loads(text)
        if rest:
            data = [d for d in data if d["ifname"] == rest[0]]
        if json_out:
            return Output(json.dumps(data, separators=(",", ":")) + "\n")
        return Output(_ip_text(data, addresses))

    def _ethtool(self, argv: list[str], ctx: Ctx) -> Output:
        words = argv[1:]
        if not words:
            return Output(
                stderr="ethtool: bad command line argument(s)\nFor more information "
                "run ethtool -h\n",
                status=1,
            )
        option = words[0] if words[0].startswith("-") else ""
        netdev = words[1] if option and len(words) > 1 else words[0]
        now = self._port_by_netdev(netdev)
        if now is None:
            return Output(
                stderr="netlink error: no device matches name (offset 24)\n"
                "netlink error: No such device\n",
                status=1,
            )
        fw = nic_text.firmware(self.host.fabric, self.host.name, self.host.device)
        if option in ("-S", "--statistics"):
            return Output(nic_text.ethtool_stats_text(self._ethtool_counters(now)))
        if option in ("-m", "--dump-module-eeprom", "--module-info"):
            return self._module(now)
        if option in ("-i", "--driver"):
            return Output(nic_text.ethtool_driver_text(now, fw))
        if option == "--show-fec":
            return Output(
                f"FEC parameters for {netdev}:\nSupported/Configured FEC encodings: "
                "RS\nActive FEC encoding: RS\n"
            )
        if option:
            return Output(
                stderr="ethtool: bad command line argument(s)\n"
                "For more information run ethtool -h\n",
                status=1,
            )
        return Output(nic_text.ethtool_settings_text(now))

    def _module(self, now: nic_text.PortNow) -> Output:
        fabric, host = self.host.fabric, self.host.name
        inv = fabric.transceiver(host, now.nic.port)
        if not inv.present:
            return Output(
                stderr="netlink error: Failed to get module EEPROM information\n"
                "netlink error: Input/output error\n",
                status=1,
            )
        dom = fabric.dom(host, now.nic.port)
        thresholds = fabric.dom_thresholds(host, now.nic.port)
        flags = fabric.dom_flags(host, now.nic.port, clear=True)
        return Output(module_eeprom.ethtool_module_text(inv, dom, thresholds, flags, DARK_DBM))

    def _rdma(self, argv: list[str], ctx: Ctx) -> Output:
        flags = {w.lstrip("-") for w in argv[1:] if w.startswith("-")}
        words = [w for w in argv[1:] if not w.startswith("-")]
        as_json = bool({"j", "json"} & flags)
        pretty = bool({"p", "pretty"} & flags)
        if not words:
            return Output(stderr="Usage: rdma [ OPTIONS ] OBJECT { COMMAND | help }\n", status=1)
        obj, rest = words[0], [w for w in words[1:] if w not in ("show", "list")]
        ports = self._ports()
        if rest and rest[0] == "link":
            rest = rest[1:]
        if rest:
            name, _, port = rest[0].partition("/")
            ports = [
                p for p in ports if p.nic.rdma == name and (not port or str(p.nic.ib_port) == port)
            ]
            if not ports:
                return Output(stderr="Wrong device name\n", status=1)
        fw = nic_text.firmware(self.host.fabric, self.host.name, self.host.device)
        if "link".startswith(obj):
            if as_json:
                data = [
                    {
                        "ifindex": i,
                        "ifname": p.nic.rdma,
                        "port": p.nic.ib_port,
                        "state": nic_text._states(p)[0],
                        "physical_state": nic_text._states(p)[1],
                        "netdev": p.nic.netdev,
                        "netdev_index": p.nic.ifindex,
                    }
                    for i, p in enumerate(ports)
                ]
                return Output(json.dumps(data, separators=(",", ":")) + "\n")
            return Output(nic_text.rdma_link_text(ports))
        if "dev".startswith(obj):
            return Output(nic_text.rdma_dev_text(ports, fw))
        if "statistic".startswith(obj) and len(obj) >= 4:
            rows = [(p.nic, nic_text.hw_counters(self.host.fabric, p)) for p in ports]
            if as_json:
                data = [{"ifname": n.rdma, "port": n.ib_port, **c} for n, c in rows]
                return Output(json.dumps(data, separators=(",", ":")) + "\n")
            return Output(nic_text.rdma_statistic_text(rows, pretty))
        return Output(stderr=f'Unknown object "{obj}"\n', status=1)

    def _ibv_devinfo(self, argv: list[str], ctx: Ctx) -> Output:
        verbose = any(a.startswith("-v") or a == "--verbose" for a in argv[1:])
        device = None
        if "-d" in argv and argv.index("-d") + 1 < len(argv):
            device = argv[argv.index("-d") + 1]
        ports = self._ports()
        if "-l" in argv or "--list" in argv:
            n = len(ports)
            return Output(
                f"{n} HCA{'s' if n != 1 else ''} found:\n"
                + "".join(f"\t{p.nic.rdma}\n" for p in ports)
            )
        if device and not any(p.nic.rdma == device for p in ports):
            return Output(stderr=f"IB device '{device}' wasn't found\n", status=255)
        if not ports:
            return Output("No IB devices found\n", status=255)
        fw = nic_text.firmware(self.host.fabric, self.host.name, self.host.device)
        return Output(nic_text.ibv_devinfo_text(ports, fw, verbose, device))

    def _ibv_devices(self, argv: list[str], ctx: Ctx) -> Output:
        rows = "".join(
            f"    {p.nic.rdma:<16}\t{nic_text.node_guid(p.nic.mac).replace(':', '')}\n"
            for p in self._ports()
        )
        return Output(
            "    device          \t   node GUID\n    ------          \t----------------\n" + rows
        )

    def _show_gids(self, argv: list[str], ctx: Ctx) -> Output:
        ports = self._ports()
        if len(argv) > 1:
            ports = [p for p in ports if p.nic.rdma == argv[1]]
        return Output(nic_text.show_gids_text(ports))

    def _show_counters(self, argv: list[str], ctx: Ctx) -> Output:
        ports = [p for p in self._ports() if len(argv) < 2 or p.nic.rdma == argv[1]]
        if not ports:
            return Output(stderr="Usage: show_counters <device>\n", status=1)
        out = []
        for p in ports:
            counters = nic_text.hw_counters(self.host.fabric, p) | {"lifespan": 10}
            out.append(
                f"Port {p.nic.ib_port} hw counters:\n"
                + "".join(f"{k}: {counters[k]}\n" for k in sorted(counters))
            )
        return Output("".join(out))


def _ip_text(data: list[dict[str, object]], addresses: bool) -> str:
    """``ip link`` / ``ip addr`` without -j, from the same records."""
    out = []
    for d in data:
        flags = ",".join(d["flags"])  # type: ignore[arg-type]
        kind = "loopback" if d["link_type"] == "loopback" else "ether"
        out.append(
            f"{d['ifindex']}: {d['ifname']}: <{flags}> mtu {d['mtu']} qdisc {d['qdisc']} "
            f"state {d['operstate']} mode DEFAULT group default qlen {d['txqlen']}\n"
            f"    link/{kind} {d['address']} brd {d['broadcast']}\n"
        )
        infos = d.get("addr_info", []) if addresses else []
        for a in infos if isinstance(infos, list) else []:
            fam = "inet" if a["family"] == "inet" else "inet6"
            brd = f" brd {a['broadcast']}" if "broadcast" in a else ""
            label = f" {a['label']}" if "label" in a else ""
            out.append(
                f"    {fam} {a['local']}/{a['prefixlen']}{brd} scope {a['scope']}{label}\n"
                "       valid_lft forever preferred_lft forever\n"
            )
    return "".join(out)

