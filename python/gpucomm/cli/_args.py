"""Argument types shared by the subcommands: each rejects a bad value with a message that argparse
prints as a usage error (exit code 2, on standard error)."""
from __future__ import annotations

import argparse
import socket


def _number(text: str, kind, noun: str):
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not {noun}") from None


def nonneg_int(text: str) -> int:
    v = _number(text, int, "an integer")
    if v < 0:
        raise argparse.ArgumentTypeError(f"{v} is negative")
    return v


def positive_int(text: str) -> int:
    v = _number(text, int, "an integer")
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
    return v


def nonneg_seconds(text: str) -> float:
    v = _number(text, float, "a number of seconds")
    if not v >= 0 or v == float("inf"):  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds >= 0, got {text}")
    return v


def bind_address(text: str) -> str:
    """An address this host can listen on (resolved now, so that a typo is a usage error)."""
    try:
        infos = socket.getaddrinfo(text, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        raise argparse.ArgumentTypeError(f"'{text}' is not an address of this host ({exc})") from None
    if not infos:
        raise argparse.ArgumentTypeError(f"'{text}' resolves to no address")
    return text


def gpu_list(text: str) -> str:
    """auto, none, or comma-separated GPU indices (checked against the machine when used)."""
    if text in ("auto", "none"):
        return text
    items = [x.strip() for x in text.split(",")]
    if not items or any(not x.isdigit() for x in items):
        raise argparse.ArgumentTypeError(f"'{text}' is not auto, none or a comma-separated list of GPU indices")
    return ",".join(items)


def env_assignment(text: str) -> tuple[str, str]:
    name, eq, value = text.partition("=")
    if not eq or not name:
        raise argparse.ArgumentTypeError(f"'{text}' is not NAME=VALUE")
    return name, value
