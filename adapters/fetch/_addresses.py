"""Which IP addresses an attachment fetch may connect to: public unicast only.

Owns `refusal`: the reason an address is not a public one (loopback, private,
link-local and cloud metadata, carrier-grade NAT, unique-local, multicast,
reserved…), or None. IPv6 forms that carry an IPv4 address (IPv4-mapped
`::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are judged by the
IPv4 address they carry, so `::ffff:127.0.0.1` is loopback. The table is
data; the check is one loop. No I/O.
"""
from __future__ import annotations

import ipaddress
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

# (network, why it is refused); the first match names the reason.
BLOCKED_V4: tuple[tuple[IPv4Network, str], ...] = tuple((IPv4Network(net), why) for net, why in (
    ("0.0.0.0/8", "unspecified (this host)"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "carrier-grade NAT"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local (cloud metadata)"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "6to4 relay anycast"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
))
BLOCKED_V6: tuple[tuple[IPv6Network, str], ...] = tuple((IPv6Network(net), why) for net, why in (
    ("::/128", "unspecified (this host)"),
    ("::1/128", "loopback"),
    ("100::/64", "discard-only"),
    ("2001:db8::/32", "documentation"),
    ("fc00::/7", "unique-local (private)"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local (deprecated private)"),
    ("ff00::/8", "multicast"),
))
NAT64 = IPv6Network("64:ff9b::/96")


def _carried_v4(address: IPv6Address) -> IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (mapped, NAT64, 6to4, compatible), if any."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in NAT64:
        return IPv4Address(int(address) & 0xFFFFFFFF)
    if int(address) >> 32 == 0 and int(address) > 1:  # deprecated IPv4-compatible ::a.b.c.d
        return IPv4Address(int(address))
    return None


def refusal(address: str) -> str | None:
    """Why `address` (an IP literal, IPv6 optionally with a %zone) is not public, or None when it is.

    A text that is not an IP address is refused too ("not an IP address"): the
    caller only ever asks about addresses a resolver returned.
    """
    try:
        parsed = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "not an IP address"
    if isinstance(parsed, IPv6Address):
        carried = _carried_v4(parsed)
        if carried is not None:
            reason = refusal(str(carried))
            return f"{reason} (IPv4 inside IPv6)" if reason else None
        return next((why for net, why in BLOCKED_V6 if parsed in net), None)
    if parsed == IPv4Address("255.255.255.255"):
        return "broadcast"
    return next((why for net, why in BLOCKED_V4 if parsed in net), None)


__all__ = ["refusal"]
