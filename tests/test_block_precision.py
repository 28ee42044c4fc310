"""One precision per block of written sums (issue 29: "digits drifting within one block"). A block — the q·k of
every key, each column of a row times a matrix, each number of z_final — writes its operands at one number of
decimals: the fewest extra decimals that make EVERY line of the block true as printed. Checked on the printed
strings themselves: the decimals read off each operand, and each complete line's sum recomputed exactly with
Decimal from the printed operands and rounded half up to the printed result's decimals."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal

import numpy as np

import qkv.examples as examples
from qkv.explain import render
from qkv.viz import figures

NUMBER = r"−?-?\d+\.\d+"


def operands(line: str) -> list[tuple[str, str]]:
    """The (left, right) operand strings of "a × b + c × d + … = r"."""
    body = line.split(" = ", 1)[1] if line.count(" = ") == 2 else line
    body = body.rsplit(" = ", 1)[0].rsplit(" ≈ ", 1)[0]
    return re.findall(rf"\(?({NUMBER})\)? × \(?({NUMBER})\)?", body)


def decimals(number: str) -> int:
    return len(number.split(".")[1])


def exact(number: str) -> Decimal:
    return Decimal(number.replace("−", "-"))


def true_as_printed(line: str) -> bool:
    result = line.rsplit(" = ", 1)[1]
    total = sum((exact(a) * exact(b) for a, b in operands(line)), Decimal(0))
    return total.quantize(Decimal(1).scaleb(-decimals(result)), rounding=ROUND_HALF_UP) == exact(result)


def test_the_multi_head_z_final_lines_write_z1_at_one_precision_and_each_is_true():
    text = render(examples.run("multi-head"), "text")
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("z_final[")]
    assert len(lines) == 3
    z1 = [operands(line)[0][0] for line in lines]            # z⁽¹⁾'s number in each line (×0.40)
    assert len({decimals(z) for z in z1}) == 1, z1           # was 0.8933, 0.9295, 0.81763
    assert all(true_as_printed(line) for line in lines), lines


def test_a_block_of_sums_gets_one_precision_that_makes_every_line_true():
    rng = np.random.default_rng(3)
    blocks = 0
    for trial in range(200):
        # numbers away from 0, so that every operand is written as a decimal (tiny ones are written 4.4e−03)
        row = (rng.uniform(0.1, 2.0, 3) * rng.choice([-1, 1], 3)).round(6)
        matrix = (rng.uniform(0.1, 2.0, (3, 4)) * rng.choice([-1, 1], (3, 4))).round(6)
        result = row @ matrix
        lines = figures._sop_block([(list(zip(row, matrix[:, c])), result[c]) for c in range(4)], 2, 2, 2)
        if any(" ≈ " in line for line in lines):
            continue                                          # no common precision: each line fitted alone
        blocks += 1
        lefts = {decimals(a) for line in lines for a, _ in operands(line)}
        rights = {decimals(b) for line in lines for _, b in operands(line)}
        assert len(lefts) == 1 and len(rights) == 1, (trial, lines)
        assert all(true_as_printed(line) for line in lines), (trial, lines)
    assert blocks >= 150                                      # the common precision is the usual case
