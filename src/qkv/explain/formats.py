"""Writing the blocks out: terminal text (rich), Markdown with LaTeX, an HTML fragment, JSON.

Heads are coloured as in the seed figures: head 1 blue, head 2 green (then orange, purple, …).
"""

from __future__ import annotations

import html
import io
import json
from typing import Any

import numpy as np

from .document import Calc, Context, Heading, Matrix, Note, Num, Para, Sym, Table, Vec
from .numbers import fmt

__all__ = ["to_text", "to_markdown", "to_html", "to_json", "HEAD_COLOURS"]

HEAD_COLOURS = [("blue", "#1f6fd1", "blue"), ("green", "#2a9d3c", "green"), ("dark_orange", "#e07b00", "orange"),
                ("magenta", "#9b3fb5", "purple"), ("cyan", "#138a9e", "teal"), ("red", "#c8372d", "red")]


def _colour(group: int | None, which: int) -> str | None:
    return None if group is None else HEAD_COLOURS[group % len(HEAD_COLOURS)][which]


def _group(index: int, size: int) -> int | None:
    return index // size if size else None


# --------------------------------------------------------------------------- text (rich)
def to_text(ctx: Context, *, color: bool = False, width: int = 100) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table as RichTable
    from rich.text import Text

    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color, color_system="standard" if color else None,
                      highlight=False, emoji=False, legacy_windows=False)

    def part_text(part: Any) -> Text:
        if isinstance(part, Num):
            return Text(_num_text(part), style=_colour(part.group, 0) or "")
        if isinstance(part, Vec):
            out = Text("[")
            for i, v in enumerate(part.values):
                if i:
                    out.append(", ")
                out.append(fmt(v, part.digits), style=_colour(_group(i, part.groups), 0) or "")
            out.append("]")
            return out
        if isinstance(part, Sym):
            return Text(part.plain)
        return Text(str(part))

    for block in ctx.blocks:
        if isinstance(block, Heading):
            if block.level == 1:
                console.print(Text(block.text, style="bold underline"))
            elif block.level == 2:
                console.print()
                console.rule(Text(block.text, style="bold"), align="left")
            else:
                console.print(Text(block.text, style="bold"))
        elif isinstance(block, Para):
            console.print(Text(block.text))
        elif isinstance(block, Note):
            console.print(Text(block.text, style="yellow"))
        elif isinstance(block, Calc):
            for line in block.lines:
                text = Text("  ")
                for i, part in enumerate(line):
                    if i:
                        text.append(" ")
                    text.append_text(part_text(part))
                console.print(text, soft_wrap=True)
        elif isinstance(block, Matrix):
            shape = " × ".join(str(s) for s in block.values.shape)
            console.print(Text(f"{block.label.plain}  ({shape})", style="italic"))
            table = RichTable(box=box.SIMPLE, show_header=block.cols is not None, pad_edge=False)
            if block.rows is not None:
                table.add_column("")
            for j in range(block.values.shape[1]):
                head = str(block.cols[j]) if block.cols is not None else ""
                table.add_column(head, justify="right", style=_colour(_group(j, block.col_groups), 0))
            for i, row in enumerate(block.values):
                cells = [fmt(v, block.digits) for v in row]
                style = _colour(_group(i, block.row_groups), 0)
                label = [str(block.rows[i]) + (" ◀" if block.highlight == i else "")] if block.rows is not None else []
                table.add_row(*label, *cells, style=("bold" if block.highlight == i else style))
            console.print(table)
        elif isinstance(block, Table):
            table = RichTable(box=box.SIMPLE, pad_edge=False)
            for head in block.header:
                table.add_column(head)
            for row in block.rows:
                table.add_row(*(part_text(cell) for cell in row))
            console.print(table)
    return buffer.getvalue()


# --------------------------------------------------------------------------- Markdown + LaTeX
def _latex_num(value: float, digits: int, group: int | None) -> str:
    text = fmt(value, digits).replace("∞", r"\infty").replace("-", "-")
    if "e" in text and "\\" not in text:
        mantissa, exponent = text.split("e")
        text = rf"{mantissa}\times 10^{{{int(exponent)}}}"
    colour = _colour(group, 2)
    return rf"{{\color{{{colour}}}{text}}}" if colour else text


def _num_text(part: Num) -> str:
    text = fmt(part.value, part.digits)
    return f"({text})" if part.paren and text.startswith("-") else text


def _latex_part(part: Any) -> str:
    if isinstance(part, Num):
        text = _latex_num(part.value, part.digits, part.group)
        return rf"\left({text}\right)" if part.paren and part.value < 0 else text
    if isinstance(part, Vec):
        cells = " & ".join(_latex_num(v, part.digits, _group(i, part.groups)) for i, v in enumerate(part.values))
        return rf"\begin{{bmatrix}} {cells} \end{{bmatrix}}"
    if isinstance(part, Sym):
        return part.latex
    return r"\text{" + str(part).replace("\\", "").replace("{", "").replace("}", "") + "}"


def _md_part(part: Any) -> str:
    if isinstance(part, (Num, Vec)):
        if isinstance(part, Num):
            return _num_text(part)
        return "[" + ", ".join(fmt(v, part.digits) for v in part.values) + "]"
    if isinstance(part, Sym):
        return part.plain
    return str(part)


def _md_escape(text: str) -> str:
    return text.replace("|", r"\|")


def to_markdown(ctx: Context) -> str:
    out: list[str] = []
    for block in ctx.blocks:
        if isinstance(block, Heading):
            out.append("#" * min(block.level, 4) + " " + block.text)
        elif isinstance(block, Para):
            out.append(block.text)
        elif isinstance(block, Note):
            out.append("> " + block.text)
        elif isinstance(block, Calc):
            body = r" \\ ".join(" ".join(_latex_part(p) for p in line) for line in block.lines)
            out.append("$$\n" + (r"\begin{gathered} " + body + r" \end{gathered}" if len(block.lines) > 1 else body)
                       + "\n$$")
        elif isinstance(block, Matrix):
            rows = []
            for i, row in enumerate(block.values):
                group = _group(i, block.row_groups)
                rows.append(" & ".join(_latex_num(v, block.digits, group if group is not None
                                                  else _group(j, block.col_groups)) for j, v in enumerate(row)))
            shape = r" \times ".join(str(s) for s in block.values.shape)
            lines = []
            if block.rows is not None or block.cols is not None:
                parts = []
                if block.rows is not None:
                    parts.append(ctx.t("md.rows", labels=", ".join(str(r) for r in block.rows)))
                if block.cols is not None:
                    parts.append(ctx.t("md.columns", labels=", ".join(str(c) for c in block.cols)))
                lines.append("*" + _md_escape("; ".join(parts)) + "*")
            lines.append("$$\n" + f"{block.label.latex} = " + r"\begin{bmatrix} " + r" \\ ".join(rows)
                         + r" \end{bmatrix}" + rf"\quad ({shape})" + "\n$$")
            out.append("\n\n".join(lines))
        elif isinstance(block, Table):
            lines = ["| " + " | ".join(_md_escape(h) for h in block.header) + " |",
                     "|" + "---|" * len(block.header)]
            lines += ["| " + " | ".join(_md_escape(_md_part(c)) for c in row) + " |" for row in block.rows]
            out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"


# --------------------------------------------------------------------------- HTML fragment
def _html_num(value: float, digits: int, group: int | None) -> str:
    colour = _colour(group, 1)
    text = html.escape(fmt(value, digits))
    return f'<span class="qkv-head-{group + 1}" style="color:{colour}">{text}</span>' if colour else text


def _html_part(part: Any) -> str:
    if isinstance(part, Num):
        text = _html_num(part.value, part.digits, part.group)
        return f"({text})" if part.paren and part.value < 0 else text
    if isinstance(part, Vec):
        return "[" + ", ".join(_html_num(v, part.digits, _group(i, part.groups))
                               for i, v in enumerate(part.values)) + "]"
    if isinstance(part, Sym):
        return html.escape(part.plain)
    return html.escape(str(part))


def to_html(ctx: Context) -> str:
    """An HTML fragment (no <html>/<head>): headings, paragraphs, tables; class names prefixed qkv-."""
    out = [f'<section class="qkv-derivation" lang="{ctx.lang}">']
    for block in ctx.blocks:
        if isinstance(block, Heading):
            level = min(block.level + 1, 6)
            out.append(f"<h{level}>{html.escape(block.text)}</h{level}>")
        elif isinstance(block, Para):
            out.append(f"<p>{html.escape(block.text)}</p>")
        elif isinstance(block, Note):
            out.append(f'<p class="qkv-note">{html.escape(block.text)}</p>')
        elif isinstance(block, Calc):
            lines = "<br>".join(" ".join(_html_part(p) for p in line) for line in block.lines)
            out.append(f'<p class="qkv-calc"><code>{lines}</code></p>')
        elif isinstance(block, Matrix):
            shape = " × ".join(str(s) for s in block.values.shape)
            rows = [f'<table class="qkv-matrix" data-step="{html.escape(block.step)}">'
                    f"<caption>{html.escape(block.label.plain)} ({shape})</caption>"]
            if block.cols is not None:
                rows.append("<thead><tr>" + ("<th></th>" if block.rows is not None else "")
                            + "".join(f"<th>{html.escape(str(c))}</th>" for c in block.cols) + "</tr></thead>")
            rows.append("<tbody>")
            for i, row in enumerate(block.values):
                mark = ' class="qkv-query"' if block.highlight == i else ""
                head = f"<th>{html.escape(str(block.rows[i]))}</th>" if block.rows is not None else ""
                group = _group(i, block.row_groups)
                cells = "".join(f"<td>{_html_num(v, block.digits, group if group is not None else _group(j, block.col_groups))}</td>"
                                for j, v in enumerate(row))
                rows.append(f"<tr{mark}>{head}{cells}</tr>")
            rows.append("</tbody></table>")
            out.append("".join(rows))
        elif isinstance(block, Table):
            head = "".join(f"<th>{html.escape(h)}</th>" for h in block.header)
            body = "".join("<tr>" + "".join(f"<td>{_html_part(c)}</td>" for c in row) + "</tr>" for row in block.rows)
            out.append(f'<table class="qkv-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')
    out.append("</section>")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- JSON
def _json_part(part: Any) -> Any:
    if isinstance(part, Num):
        return {"number": part.value, "text": fmt(part.value, part.digits)}
    if isinstance(part, Vec):
        return {"vector": list(part.values), "text": [fmt(v, part.digits) for v in part.values]}
    if isinstance(part, Sym):
        return {"symbol": part.plain, "latex": part.latex}
    return str(part)


def _finite(values: np.ndarray) -> list:
    return np.vectorize(lambda v: float(v) if np.isfinite(v) else str(v), otypes=[object])(values).tolist()


def to_json(ctx: Context) -> str:
    """{"format": "qkv-explanation", …, "blocks": [...], "trace": <the Trace's JSON>}; one object."""
    blocks = []
    for block in ctx.blocks:
        if isinstance(block, Heading):
            blocks.append({"type": "heading", "level": block.level, "text": block.text})
        elif isinstance(block, (Para, Note)):
            blocks.append({"type": type(block).__name__.lower(), "text": block.text})
        elif isinstance(block, Calc):
            blocks.append({"type": "calc", "lines": [[_json_part(p) for p in line] for line in block.lines]})
        elif isinstance(block, Matrix):
            blocks.append({"type": "matrix", "label": block.label.plain, "latex": block.label.latex,
                           "step": block.step, "shape": list(block.values.shape), "digits": block.digits,
                           "values": _finite(block.values),
                           "text": [[fmt(v, block.digits) for v in row] for row in block.values],
                           "rows": block.rows, "columns": block.cols, "highlight": block.highlight})
        elif isinstance(block, Table):
            blocks.append({"type": "table", "header": block.header,
                           "rows": [[_json_part(c) for c in row] for row in block.rows]})
    document = {"format": "qkv-explanation", "version": 1, "lang": ctx.lang, "digits": ctx.digits,
                "by_hand": ctx.by_hand, "title": ctx.trace.title, "blocks": blocks, "trace": ctx.trace.to_dict()}
    return json.dumps(document, ensure_ascii=False, indent=1, allow_nan=False) + "\n"
