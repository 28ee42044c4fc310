"""Writing the blocks out: terminal text (rich), Markdown with LaTeX, an HTML fragment, JSON.

Heads are coloured as in the posts' figures (`qkv.explain.style.HEAD_COLOURS`, the one palette of every
renderer): head 0 blue, head 1 green (then orange, purple, …).
"""

from __future__ import annotations

import html
import io
import json
from typing import Any

import numpy as np

from .document import Calc, Context, Heading, Matrix, Note, Num, Para, Sym, Table, Vec, shown
from .numbers import fmt, fmt_typeset
from .style import HEAD_COLOURS, head_colour

__all__ = ["to_text", "to_markdown", "to_html", "to_json", "HEAD_COLOURS"]

_WHICH = {0: "rich", 1: "text", 2: "latex"}      # HTML: the head colour darkened to 4.5:1 on white


def _colour(group: int | None, which: int) -> str | None:
    return None if group is None else head_colour(group, _WHICH[which])


def _group(index: int, size: int) -> int | None:
    return index // size if size else None


# --------------------------------------------------------------------------- what is shown of a long block
# Which rows, columns and values each format prints (None = an ellipsis). ctx.full shows everything.
def _vec_at(part: Vec, full: bool) -> list:
    return shown(len(part.values), None if full else part.limit)


def _matrix_at(ctx: Context, block: Matrix) -> tuple[list, list]:
    limit = None if ctx.full else block.limit
    rows, cols = block.values.shape
    return shown(rows, limit, keep=(block.highlight,)), shown(cols, limit)


def _table_at(ctx: Context, block: Table) -> list:
    return shown(len(block.rows), None if ctx.full else block.limit, keep=block.keep)


def _shown_note(ctx: Context, block: Matrix, rows_at: list, cols_at: list) -> str:
    """"9 of 11 rows shown, 8 of 384 columns shown" for an elided matrix; "" when every number is shown."""
    rows, cols = block.values.shape
    parts = []
    for key, at, total in (("shown.rows", rows_at, rows), ("shown.columns", cols_at, cols)):
        count = sum(i is not None for i in at)
        if count < total:
            parts.append(ctx.t(key, shown=count, total=total))
    return ", ".join(parts)


def _masked_word(ctx: Context, block: Matrix, i: int, j: int) -> str:
    """"masked" for a weight whose key the mask blocked (never "0.0000"); "" otherwise."""
    return ctx.t("masked") if block.masked is not None and block.masked[i, j] else ""


def _labels_at(labels: list, at: list) -> list:
    return ["…" if i is None else labels[i] for i in at]


def _row_label(block: Matrix, i: int, rows_at: list) -> str:
    """A row's label; with its position ("7 the") when rows are elided, so repeated tokens stay apart."""
    label = str(block.rows[i])
    return f"{i} {label}" if None in rows_at else label


# --------------------------------------------------------------------------- text (rich)
def to_text(ctx: Context, *, color: bool = False, width: int = 100) -> str:
    from rich import box
    from rich.console import Console
    from rich.measure import Measurement
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
            for n, i in enumerate(_vec_at(part, ctx.full)):
                if n:
                    out.append(", ")
                if i is None:
                    out.append("…")
                else:
                    out.append(fmt(part.values[i], part.digits), style=_colour(_group(i, part.groups), 0) or "")
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
            rows_at, cols_at = _matrix_at(ctx, block)
            shape = " × ".join(str(s) for s in block.values.shape)
            note = _shown_note(ctx, block, rows_at, cols_at)
            console.print(Text(f"{block.label.plain}  ({shape}{'; ' + note if note else ''})", style="italic"))
            table = RichTable(box=box.SIMPLE, show_header=block.cols is not None, pad_edge=False)
            if block.rows is not None:
                table.add_column("")
            for j in cols_at:
                if j is None:
                    table.add_column("…", justify="center")
                    continue
                head = str(block.cols[j]) if block.cols is not None else ""
                table.add_column(head, justify="right", style=_colour(_group(j, block.col_groups), 0))
            for i in rows_at:
                if i is None:   # the elided rows: ⋮ under each column, ⋱ where elided columns cross
                    label = ["⋮"] if block.rows is not None else []
                    table.add_row(*label, *("⋱" if j is None else "⋮" for j in cols_at))
                    continue
                row = block.values[i]
                cells = ["…" if j is None else _masked_word(ctx, block, i, j) or fmt(row[j], block.digits)
                         for j in cols_at]
                style = _colour(_group(i, block.row_groups), 0)
                mark = " ◀" if block.highlight == i else ""
                label = [_row_label(block, i, rows_at) + mark] if block.rows is not None else []
                table.add_row(*label, *cells, style=("bold" if block.highlight == i else style))
            if ctx.full:   # every column, however wide: the table gets its natural width, never squeezed
                natural = Measurement.get(console, console.options.update_width(1 << 20), table).maximum
                console.width = max(width, natural)
                console.print(table)
                console.width = width
            else:
                console.print(table)
        elif isinstance(block, Table):
            table = RichTable(box=box.SIMPLE, pad_edge=False)
            for head in block.header:
                table.add_column(head)
            for i in _table_at(ctx, block):
                if i is None:
                    table.add_row(*("⋮" for _ in block.header))
                else:
                    table.add_row(*(part_text(cell) for cell in block.rows[i]))
            console.print(table)
    return buffer.getvalue()


# --------------------------------------------------------------------------- Markdown + LaTeX
def _latex_num(value: float, digits: int, group: int | None) -> str:
    text = fmt(value, digits).replace("∞", r"\infty")
    if "e" in text and "\\" not in text:
        mantissa, exponent = text.split("e")
        text = rf"{mantissa}\times 10^{{{int(exponent)}}}"
    colour = _colour(group, 2)
    return rf"{{\color{{{colour}}}{text}}}" if colour else text


def _num_text(part: Num) -> str:
    text = fmt(part.value, part.digits)
    return f"({text})" if part.paren and text.startswith("-") else text


def _latex_part(part: Any, full: bool = False) -> str:
    if isinstance(part, Num):
        text = _latex_num(part.value, part.digits, part.group)
        return rf"\left({text}\right)" if part.paren and part.value < 0 else text
    if isinstance(part, Vec):
        cells = " & ".join(r"\cdots" if i is None else _latex_num(part.values[i], part.digits, _group(i, part.groups))
                           for i in _vec_at(part, full))
        return rf"\begin{{bmatrix}} {cells} \end{{bmatrix}}"
    if isinstance(part, Sym):
        return part.latex
    return r"\text{" + str(part).replace("\\", "").replace("{", "").replace("}", "") + "}"


def _md_part(part: Any, full: bool = False) -> str:
    if isinstance(part, (Num, Vec)):
        if isinstance(part, Num):
            return _num_text(part)
        return "[" + ", ".join("…" if i is None else fmt(part.values[i], part.digits)
                               for i in _vec_at(part, full)) + "]"
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
            body = r" \\ ".join(" ".join(_latex_part(p, ctx.full) for p in line) for line in block.lines)
            out.append("$$\n" + (r"\begin{gathered} " + body + r" \end{gathered}" if len(block.lines) > 1 else body)
                       + "\n$$")
        elif isinstance(block, Matrix):
            rows_at, cols_at = _matrix_at(ctx, block)
            rows = []
            for i in rows_at:
                if i is None:   # the elided rows: ⋮ under each column, ⋱ where elided columns cross
                    rows.append(" & ".join(r"\ddots" if j is None else r"\vdots" for j in cols_at))
                    continue
                row, group = block.values[i], _group(i, block.row_groups)
                rows.append(" & ".join(r"\cdots" if j is None else
                                       (r"\text{" + _masked_word(ctx, block, i, j) + "}") if _masked_word(ctx, block, i, j)
                                       else _latex_num(row[j], block.digits, group if group is not None
                                                       else _group(j, block.col_groups)) for j in cols_at))
            shape = r" \times ".join(str(s) for s in block.values.shape)
            note = _shown_note(ctx, block, rows_at, cols_at)
            lines = []
            if block.rows is not None or block.cols is not None or note:
                parts = []
                if block.rows is not None:
                    parts.append(ctx.t("md.rows", labels=", ".join("…" if i is None else _row_label(block, i, rows_at)
                                                                   for i in rows_at)))
                if block.cols is not None:
                    parts.append(ctx.t("md.columns", labels=", ".join(str(c) for c in _labels_at(block.cols, cols_at))))
                if note:
                    parts.append(note)
                lines.append("*" + _md_escape("; ".join(parts)) + "*")
            lines.append("$$\n" + f"{block.label.latex} = " + r"\begin{bmatrix} " + r" \\ ".join(rows)
                         + r" \end{bmatrix}" + rf"\quad ({shape})" + "\n$$")
            out.append("\n\n".join(lines))
        elif isinstance(block, Table):
            lines = ["| " + " | ".join(_md_escape(h) for h in block.header) + " |",
                     "|" + "---|" * len(block.header)]
            lines += ["| " + " | ".join("⋮" for _ in block.header) + " |" if i is None else
                      "| " + " | ".join(_md_escape(_md_part(c, ctx.full)) for c in block.rows[i]) + " |"
                      for i in _table_at(ctx, block)]
            out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"


# --------------------------------------------------------------------------- HTML fragment
def _html_num(value: float, digits: int, group: int | None) -> str:
    colour = _colour(group, 1)
    text = html.escape(fmt_typeset(value, digits))      # "−0.18", as the page's matrix and cell views write it
    if colour:
        return f'<span class="qkv-n qkv-head-{group}" style="color:{colour}">{text}</span>'
    return f'<span class="qkv-n">{text}</span>'     # a number never breaks across lines


def _html_part(part: Any, full: bool = False) -> str:
    if isinstance(part, Num):
        text = _html_num(part.value, part.digits, part.group)
        return f"({text})" if part.paren and part.value < 0 else text
    if isinstance(part, Vec):
        return "[" + ", ".join("…" if i is None else _html_num(part.values[i], part.digits, _group(i, part.groups))
                               for i in _vec_at(part, full)) + "]"
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
            lines = "<br>".join(" ".join(_html_part(p, ctx.full) for p in line) for line in block.lines)
            out.append(f'<p class="qkv-calc"><code>{lines}</code></p>')
        elif isinstance(block, Matrix):
            rows_at, cols_at = _matrix_at(ctx, block)
            shape = " × ".join(str(s) for s in block.values.shape)
            note = _shown_note(ctx, block, rows_at, cols_at)
            rows = [f'<table class="qkv-matrix" data-step="{html.escape(block.step)}">'
                    f"<caption>{html.escape(block.label.plain)} ({shape}{html.escape('; ' + note) if note else ''})"
                    "</caption>"]
            gap = '<td class="qkv-gap">{}</td>'
            if block.cols is not None:
                rows.append("<thead><tr>" + ("<th></th>" if block.rows is not None else "")
                            + "".join(f"<th>{html.escape(str(c))}</th>" for c in _labels_at(block.cols, cols_at))
                            + "</tr></thead>")
            rows.append("<tbody>")
            for i in rows_at:
                if i is None:   # the elided rows: ⋮ under each column, ⋱ where elided columns cross
                    head = "<th>⋮</th>" if block.rows is not None else ""
                    rows.append('<tr class="qkv-gap">' + head
                                + "".join(gap.format("⋱" if j is None else "⋮") for j in cols_at) + "</tr>")
                    continue
                row = block.values[i]
                mark = ' class="qkv-query"' if block.highlight == i else ""
                head = f"<th>{html.escape(_row_label(block, i, rows_at))}</th>" if block.rows is not None else ""
                group = _group(i, block.row_groups)
                cells = "".join(gap.format("…") if j is None else
                                f'<td class="qkv-masked">{html.escape(_masked_word(ctx, block, i, j))}</td>'
                                if _masked_word(ctx, block, i, j) else
                                f"<td>{_html_num(row[j], block.digits, _group(j, block.col_groups) if group is None else group)}</td>"
                                for j in cols_at)
                rows.append(f"<tr{mark}>{head}{cells}</tr>")
            rows.append("</tbody></table>")
            out.append("".join(rows))
        elif isinstance(block, Table):
            head = "".join(f"<th>{html.escape(h)}</th>" for h in block.header)
            body = "".join('<tr class="qkv-gap">' + "<td>⋮</td>" * len(block.header) + "</tr>" if i is None else
                           "<tr>" + "".join(f"<td>{_html_part(c, ctx.full)}</td>" for c in block.rows[i]) + "</tr>"
                           for i in _table_at(ctx, block))
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
                           "text": [[_masked_word(ctx, block, i, j) or fmt(v, block.digits) for j, v in enumerate(row)]
                                    for i, row in enumerate(block.values)],
                           "rows": block.rows, "columns": block.cols, "highlight": block.highlight})
        elif isinstance(block, Table):
            blocks.append({"type": "table", "header": block.header,
                           "rows": [[_json_part(c) for c in row] for row in block.rows]})
    document = {"format": "qkv-explanation", "version": 1, "lang": ctx.lang, "digits": ctx.digits,
                "by_hand": ctx.by_hand, "title": ctx.trace.title, "blocks": blocks,
                "trace": (ctx.saved or ctx.trace).to_dict()}      # the API's names: read back in any language
    return json.dumps(document, ensure_ascii=False, indent=1, allow_nan=False) + "\n"
