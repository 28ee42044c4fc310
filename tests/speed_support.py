"""Shared by the speed-rule tests (test_speed_overhead, test_speed_routes): the rules read torch's thread count and
qkv's machine (its CPU count), so a test that asks what they choose fixes both."""

from __future__ import annotations

import contextlib
import dataclasses

import torch

from qkv.kernels import native
from qkv.kernels import route


@contextlib.contextmanager
def cpus_a_side(cpus: int):
    """torch on ``cpus`` threads and qkv's machine ``cpus`` CPUs (both restored after)."""
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(cpus)
        with native.use_machine(dataclasses.replace(route.current_machine(), cpus=cpus)):
            yield
    finally:
        torch.set_num_threads(before)
