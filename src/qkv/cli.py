"""The `qkv` command: parses arguments, calls the library, prints. Exit codes: 0 ok, 2 bad input.

With no command it runs the self-attention worked example of the post “도해와 최소 사례로 직관적으로 이해하는 Self-attention, …” (`qkv example self-attention`);
options before any command are that example's (`qkv --lang ko`, `qkv --by-hand`, `qkv --digits 2`).

Every error a user can cause — a bad option (argparse's too), a bad file, an unusable output
path, text that is not UTF-8, a standard output that is closed, full or cannot encode the text —
is one line on standard error, ``qkv: error: …``, and exit status 2. An invalid choice is worded
one way everywhere (``--lang: 'fr' is not one of en, ko``, with "did you mean" when one is close).
Output paths are checked before any work, and every file a command writes is put in place only
when the whole command succeeds (`qkv._io.all_or_nothing`); each written file is then named in
one line on standard error (``qkv: wrote FILE``), so standard output stays clean for a pipe.
Everything printed to a terminal passes through `qkv.frontdoor.printable` (control characters in
tokens, titles and names are shown, not acted on).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import io
import os
import sys
import warnings

from . import __version__
from ._io import all_or_nothing, check_output
from .commands import COMMANDS
from .errors import InputError
from .frontdoor import check_figure, not_one_of, printable

DEFAULT_ARGS = ["example", "self-attention"]
# Options that name a file a command writes (checked before any work when given as a string).
OUTPUT_OPTIONS = ("out", "figure", "json", "markdown")
# Arguments that are paths (any bytes the file system allows); every other text argument must be UTF-8.
PATH_METAVARS = ("FILE", "DIR", "PNG", "PATH")
TOP_LEVEL = ("-h", "--help", "--version")
# The streams `Output` wraps, and the part of their messages' text keys that names them.
STREAMS = {"standard output": "stdout", "standard error": "stderr"}


# The language of the messages while `main` runs: read from argv before parsing (`lang_of`), so that
# argparse's own complaints, said before any option is parsed, are in the reader's language too.
_LANG = "en"


class UsageError(Exception):
    """argparse's complaint about the command line, reported as one line by `main`."""

    def __init__(self, prog: str, message: str):
        super().__init__(message)
        self.prog, self.message = prog, message


def lang_of(argv: list[str]) -> str:
    """The language ``--lang`` asks for in ``argv`` (``--lang ko``, ``--lang=ko``; before ``--``); the
    locale's when it is absent (`qkv.frontdoor.locale_lang`: LC_ALL, LC_MESSAGES, LANG); "en" when it is
    not one of the languages (that value is refused later, in English)."""
    from .explain.texts import LANGS
    from .frontdoor import locale_lang

    args = argv[: argv.index("--")] if "--" in argv else argv
    found = None
    for i, arg in enumerate(args):
        if arg == "--lang" and i + 1 < len(args):
            found = args[i + 1]
        elif arg.startswith("--lang="):
            found = arg.split("=", 1)[1]
    if found is None:
        return locale_lang()
    return found if found in LANGS else "en"


@contextlib.contextmanager
def argparse_words(lang: str):
    """argparse's own words ("the following arguments are required", "expected one argument", "usage:",
    "options") in ``lang`` while the block runs: argparse looks every one of them up through its module's
    ``_`` and ``ngettext`` (gettext) at the moment it says it, so replacing those two translates them by
    class. The table is `qkv.explain.texts`' ``argparse.*`` keys (English: argparse's exact message ids)."""
    if lang == "en":
        yield
        return
    from .explain import texts

    table = {texts.EN[k]: texts.LANGS[lang][k] for k in texts.EN if k.startswith("argparse.")}
    saved = argparse._, argparse.ngettext
    argparse._ = lambda message: table.get(message, message)
    argparse.ngettext = lambda one, many, n: table.get(one if n == 1 else many, one if n == 1 else many)
    try:
        yield
    finally:
        argparse._, argparse.ngettext = saved


def say(key: str, **values) -> str:
    """The sentence ``key`` of `qkv.explain.texts` in the language of this run's messages."""
    from .explain.texts import text

    return text(_LANG, key, **values)


class HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default (``(default 20)``, ``(기본값 20)``) unless the text already
    says it. ``lang`` is the parser's language (`Parser.lang`): the word and the ending are
    `qkv.explain.texts`' ``help.default*`` keys."""

    lang = "en"

    def _get_help_string(self, action: argparse.Action) -> str:
        from .explain.texts import text

        help_text = action.help or ""
        if (action.default not in (None, False, argparse.SUPPRESS, [], ()) and action.option_strings
                and text(self.lang, "help.default.word") not in help_text and "%(default)" not in help_text):
            help_text += text(self.lang, "help.default")
        return help_text

    # argparse measures by len(), but a terminal shows Hangul (and kana, Hanja) two columns wide: the usage
    # line, the options' column and the help lines are measured by the width they show, so Korean help (its
    # placeholders too: --out 파일) fits the terminal and lines up as English does. Text with no wide
    # character measures the same either way (English help is laid out exactly as before).
    def format_help(self) -> str:
        if "len" in vars(argparse):                    # already measuring by columns (a nested call)
            return super().format_help()
        argparse.len = _shown_len                      # argparse's module looks len up in its globals first
        try:
            return super().format_help()
        finally:
            del argparse.len

    def add_argument(self, action: argparse.Action) -> None:
        if "len" in vars(argparse):
            return super().add_argument(action)
        argparse.len = _shown_len                      # the options' column width, from each invocation's columns
        try:
            return super().add_argument(action)
        finally:
            del argparse.len

    def _format_action(self, action: argparse.Action) -> str:
        """argparse's, with the help column where the header's columns put it: argparse pads the header with
        ``%-*s``, by characters, so a header with wide characters (--out 파일) loses one space for each."""
        formatted = super()._format_action(action)
        header = self._format_action_invocation(action)
        extra = _columns(header) - len(header)
        start = self._current_indent + len(header)
        if extra and formatted[self._current_indent:start] == header and formatted[start:start + extra + 2] == " " * (extra + 2):
            formatted = formatted[:start] + formatted[start + extra:]
        return formatted

    def _split_lines(self, text: str, width: int) -> list[str]:
        if _columns(text) == len(text):
            return super()._split_lines(text, width)
        return _wrap(self._whitespace_matcher.sub(" ", text).strip(), width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if _columns(text) == len(text):
            return super()._fill_text(text, width, indent)
        lines = _wrap(self._whitespace_matcher.sub(" ", text).strip(), width - len(indent))
        return "\n".join(indent + line for line in lines)


def _shown_len(obj) -> int:
    """len() as a terminal shows it: a string's columns (`_columns`), any other object's own length."""
    return _columns(obj) if isinstance(obj, str) else len(obj)


def _columns(text: str) -> int:
    """The columns ``text`` takes in a terminal: East Asian wide and full-width characters count two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` columns (`_columns`), broken at spaces; a longer word stays whole."""
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        if line and _columns(line) + 1 + _columns(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + [line] if line else lines


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are exceptions (one line, exit 2) instead of usage + exit, whose
    invalid choices are worded as everywhere else in qkv, and whose help shows every default.
    ``lang``: the language its help is written in (the descriptions come from `qkv.explain.texts`'
    ``help.*`` keys, built by `build_parser`); argparse's own words follow `argparse_words`."""

    def __init__(self, *args, lang: str = "en", **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        self.lang = lang
        super().__init__(*args, **kwargs)

    def _get_formatter(self):
        formatter = super()._get_formatter()
        formatter.lang = self.lang
        return formatter

    def add_argument(self, *args, **kwargs):  # type: ignore[override]
        """argparse's, with the value's placeholder in the parser's language (`qkv.explain.texts.metavar`:
        ``FILE`` → 파일, ``KEY=VALUE`` → 키=값), in help, usage and argparse's errors alike. The placeholder as
        the code writes it stays on the action as ``typed_metavar`` (what `check_text_arguments` reads)."""
        typed = kwargs.get("metavar")
        if isinstance(typed, str):
            from .explain.texts import metavar

            kwargs["metavar"] = metavar(self.lang, typed)
        action = super().add_argument(*args, **kwargs)
        action.typed_metavar = typed
        return action

    def add_subparsers(self, **kwargs):  # type: ignore[override]
        if isinstance(kwargs.get("metavar"), str):
            from .explain.texts import metavar

            kwargs["metavar"] = metavar(self.lang, kwargs["metavar"])
        return super().add_subparsers(**kwargs)

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(self.prog, message)

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        """argparse's; a ``--lang`` not given is the locale's (`qkv.frontdoor.locale_lang`), read when the
        line is parsed: the one place that decides the language of every command and of ``qkv serve``."""
        parsed, extras = super().parse_known_args(args, namespace)
        if getattr(parsed, "lang", "") is None:
            from .frontdoor import locale_lang

            parsed.lang = locale_lang()
        return parsed, extras

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        """argparse's, plus "did you mean" for a misspelled option (``--lnag`` → ``--lang``)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            guess = self._guess_option(parsed, extras)
            # the help to see is the command's, where its options are listed ('qkv example --help')
            raise UsageError(self._command_parser(parsed).prog,
                             say("cli.unrecognized.guess" if guess else "cli.unrecognized", args=" ".join(extras),
                                 guess=repr(guess)))
        return parsed

    def _command_parser(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        """The sub-parser of the command ``parsed`` names (this parser when there is none)."""
        command = getattr(parsed, "command", None)
        if command and self._subparsers is not None:
            return self._subparsers._group_actions[0].choices.get(command, self)
        return self

    def _guess_option(self, parsed: argparse.Namespace, extras: list[str]) -> str | None:
        import difflib

        parser = self._command_parser(parsed)
        options = {s.casefold(): s for p in {self, parser} for a in p._actions for s in a.option_strings
                   if s.startswith("--")}
        for extra in extras:
            if extra.startswith("-") and extra != "-":
                name = extra.split("=", 1)[0].casefold()
                name = "--" + name.lstrip("-")
                if name in options:
                    return options[name]
                close = difflib.get_close_matches(name, list(options), n=1, cutoff=0.6)
                if close:
                    return options[close[0]]
        return None

    def _get_value(self, action: argparse.Action, arg_string: str):  # type: ignore[override]
        """argparse's, but a qkv type (`qkv._io.int_option`) that refuses a value words it in the run's
        language (its InputError carries a text key); argparse's own ``invalid int value`` otherwise."""
        try:
            return super()._get_value(action, arg_string)
        except argparse.ArgumentError as exc:
            error = getattr(exc.__context__, "input_error", None)
            if isinstance(error, InputError):
                raise argparse.ArgumentError(action, error.say(_LANG)) from None
            raise

    def _check_value(self, action: argparse.Action, value) -> None:  # type: ignore[override]
        if action.choices is not None and value not in action.choices:
            field = action.option_strings[-1] if action.option_strings else (action.metavar or action.dest)
            raise not_one_of(value, list(action.choices), field=str(field), lang=_LANG)


def build_parser(lang: str = "en") -> argparse.ArgumentParser:
    """The `qkv` parser with every description and option help in ``lang`` (`qkv.explain.texts`' ``help.*``
    keys; `main` builds it in the language `lang_of` reads from the whole command line, so ``--lang ko``
    before or after ``--help`` gives the same Korean help)."""
    import functools

    from .commands._options import help_words

    t = help_words(lang)
    parser = Parser(prog="qkv", description=t("qkv.about"), lang=lang)
    parser.add_argument("--version", action=VersionAction, nargs=0, help=t("qkv.version"))
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND",
                                       parser_class=functools.partial(Parser, lang=lang))
    for name in COMMANDS:
        importlib.import_module(f"qkv.commands.{name}").register(subparsers, t)
    return parser


# `main`'s parser for each language, built on its first call in a process. A command line runs `main`
# once, but a program that calls it many times in one process (the test suite calls it thousands of times,
# a notebook may) rebuilt all ~260 sub-parsers each time, about 0.1 s a call. Parsing leaves a parser as it
# was (each call gets a new Namespace), so the one kept parser gives the same answers as a new one.
_PARSERS: dict[str, argparse.ArgumentParser] = {}


def _parser(lang: str) -> argparse.ArgumentParser:
    """`build_parser(lang)`, kept for the process (call inside `argparse_words(lang)`, as it was built)."""
    if lang not in _PARSERS:
        _PARSERS[lang] = build_parser(lang)
    return _PARSERS[lang]


class VersionAction(argparse.Action):
    """``qkv --version``: ``qkv 0.1.0 (C kernel built (AVX2+FMA, BLAS sgemm); torch 2.13.0)``."""

    def __call__(self, parser, namespace, values, option_string=None):
        from .commands.doctor import summary

        sys.stdout.write(f"qkv {__version__} ({summary(lang=_LANG)})\n")
        parser.exit()


class Output:
    """Standard output or error as the commands see it while `main` runs.

    A terminal gets `printable` text; a closed stream (``>&-``), a full disk or an encoding that cannot
    hold the text (PYTHONIOENCODING=ascii) becomes one InputError naming the stream (a broken pipe is
    left to `main`: the reader went away, that is not an error)."""

    def __init__(self, stream, name: str):
        self._stream, self._name = stream, name
        self._tty = bool(stream is not None and _isatty(stream))

    def write(self, text: str) -> int:
        if self._stream is None:
            raise InputError.keyed(f"cli.output.closed.{STREAMS[self._name]}")
        if self._tty:
            text = printable(text)
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except UnicodeEncodeError as exc:
            raise InputError.keyed(f"cli.output.encoding.{STREAMS[self._name]}", encoding=exc.encoding,
                                   text=repr(exc.object[exc.start:exc.end])) from None
        except OSError as exc:
            raise InputError.keyed(f"cli.output.failed.{STREAMS[self._name]}", reason=exc) from None

    def flush(self) -> None:
        if self._stream is None:
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise InputError.keyed(f"cli.output.failed.{STREAMS[self._name]}", reason=exc) from None

    def isatty(self) -> bool:
        return self._tty

    def __getattr__(self, name: str):
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def main(argv: list[str] | None = None) -> int:
    """The `qkv` command: ``argv`` (default: the process's own arguments) → its exit status.

    Called with no arguments — as the ``qkv`` program or ``python -m qkv``, a process of its own — it also
    imports matplotlib without writing its artists' ``set`` docstrings (`qkv._matplotlib`: a fifth of a
    second of every figure); a call with an argument list (a program of one's own, the tests) changes nothing
    outside the command."""
    if argv is None:
        from . import _matplotlib

        _matplotlib.install()
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0].startswith("-") and "--version" in argv[: argv.index("--") if "--" in argv else None]:
        lang = lang_of(argv)                   # `qkv --lang ko --version`: the version, as anywhere before a command
        argv = ["--version"] + (["--lang", lang] if lang != "en" else [])
    real_out, real_err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Output(real_out, "standard output"), Output(real_err, "standard error")
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return _run(argv)
    finally:
        global _LANG
        sys.stdout, sys.stderr = real_out, real_err
        _LANG = "en"


def _with_command(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """argv with its command first. Options before a command word (`qkv --lang ko doctor`) move after
    it, as the command reads them; with no command word the options are the default example's
    (`qkv`, `qkv --lang ko`, `qkv --digits 2 cross-attention`: example's NAME defaults to
    self-attention). A value of an option that takes one (`--figure doctor`) is not a command word.
    `parser` is the one the call parses with (built once)."""
    if argv and not (argv[0].startswith("-") and argv[0] not in TOP_LEVEL):
        return argv
    if _only_lang_and_help(argv):                 # `qkv --lang ko --help`: qkv's own help, as `qkv --help --lang ko`
        return ["--help"]
    takes_value = set()
    example = parser._subparsers._group_actions[0].choices["example"]
    for action in example._actions:
        if action.option_strings and action.nargs != 0:
            takes_value.update(action.option_strings)
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        i += 2 if argv[i] in takes_value else 1
    if i < len(argv) and argv[i] in COMMANDS and argv[i] != "example":
        return [argv[i], *argv[:i], *argv[i + 1:]]
    return ["example", *argv]


def _only_lang_and_help(argv: list[str]) -> bool:
    """Whether ``argv`` is ``--help`` (or ``-h``) with nothing else but ``--lang`` options: the top-level help
    in that language, whichever comes first (the language is read from the whole line by `lang_of`)."""
    rest, i, helped = argv[: argv.index("--")] if "--" in argv else argv, 0, False
    while i < len(rest):
        if rest[i] in ("-h", "--help"):
            helped, i = True, i + 1
        elif rest[i] == "--lang":
            i += 2
        elif rest[i].startswith("--lang="):
            i += 1
        else:
            return False
    return helped


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning the library gives (transformers warns and loads; so does qkv) as one line,
    ``qkv: warning: …``, not Python's two (the source file, the line of code that called it)."""
    try:
        print(f"qkv: {say('cli.warning', text=' '.join(str(message).split()))}", file=sys.stderr)
    except (InputError, OSError):
        pass


def _run(argv: list[str]) -> int:
    global _LANG
    lang = lang_of(argv)                            # errors with a text key answer in the chosen language,
    if not _stderr_writes(lang):                    # unless standard error cannot encode it (PYTHONIOENCODING=
        lang = "en"                                 # ascii): then in English, so that the one line is still said
    _LANG = lang
    try:
        with argparse_words(lang):
            parser = _parser(lang)
            argv = _with_command(argv, parser)
            _check_command(argv)
            args = parser.parse_args(argv)
        if getattr(args, "func", None) is None:
            raise InputError.keyed("cli.no_command", commands=", ".join(COMMANDS))
        check_text_arguments(parser, args)
        check_outputs(args)
        with _signals_stop(), _stdout_after_files(args) as printed:
            with all_or_nothing():
                code = int(args.func(args) or 0)
                sys.stdout.flush()
            printed()
        if code == 0:
            say_written(args, lang)
        return code
    except SystemExit as exc:                      # --help, --version
        code = exc.code if isinstance(exc.code, int) else 0
        try:
            sys.stdout.flush()
        except InputError as error:
            return _output_failed(error, lang)
        return code
    except UsageError as exc:
        return fail(say("cli.see_help", message=exc.message, prog=exc.prog))
    except InputError as exc:
        if exc.problem.startswith(("standard output ", "cannot write to standard output")):
            return _output_failed(exc, lang)
        return fail(exc.say(lang))
    except KeyboardInterrupt:
        return 130
    except Stopped as exc:                         # SIGTERM or SIGHUP: every output discarded, nothing said
        return 128 + exc.signum
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except MemoryError as exc:                     # NumPy's "Unable to allocate", an mmap's ENOMEM (os error 12)
        return _out_of_memory(exc)
    except OSError as exc:
        if exc.errno != errno.ENOMEM:
            raise
        return _out_of_memory(exc)
    except ImportError as exc:                     # a module loaded late whose library could not be mapped
        if not any(words in str(exc) for words in ("failed to map segment", "Cannot allocate memory")):
            raise
        return _out_of_memory(exc)


class Stopped(BaseException):
    """SIGTERM or SIGHUP arrived while a command ran (raised in the main thread by `_signals_stop`). A
    BaseException, so that no command's ``except Exception`` keeps it: it unwinds through `all_or_nothing`
    and `write_atomic_with`, which remove their temporary files, and `main` exits with 128 + the signal."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signum)


@contextlib.contextmanager
def _signals_stop():
    """While a command runs (main thread only), SIGTERM and SIGHUP raise `Stopped` instead of ending the
    process where it stands: a write in progress would leave its hidden temporary file behind
    (``.name.XXXX.tmp``). The handlers before are put back afterwards (`qkv ring` installs its own inside)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise Stopped(signum)

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class _Held(io.StringIO):
    """Standard output held back while a command that writes files runs (see `_stdout_after_files`); it
    answers ``isatty`` and ``encoding`` as the stream it stands for."""

    def __init__(self, stream):
        super().__init__()
        self._stream = stream

    def isatty(self) -> bool:
        return _isatty(self._stream)

    @property
    def encoding(self):                             # type: ignore[override]
        return getattr(self._stream, "encoding", None) or "utf-8"


@contextlib.contextmanager
def _stdout_after_files(args: argparse.Namespace):
    """What a command that writes files (``--out``, ``--figure``, ``--json FILE``, ``--markdown``) prints on
    standard output is printed after every file has been written, never before: if a file cannot be
    written (``--json /dev/full``), the one error line is all that is said, and no table precedes it as if
    the command had succeeded. Yields ``printed()``, called once the files are in place. Commands writing no
    file print as they go."""
    writes = any(isinstance(getattr(args, dest, None), str) for dest in OUTPUT_OPTIONS)
    if not writes:
        yield lambda: None
        return
    stream = sys.stdout
    held = _Held(stream)
    sys.stdout = held

    def printed() -> None:
        sys.stdout = stream
        stream.write(held.getvalue())
        stream.flush()

    try:
        yield printed
    finally:
        sys.stdout = stream


def _out_of_memory(exc: BaseException) -> int:
    """One line for a command that ran out of memory (a MemoryError or ENOMEM anywhere), naming the size
    NumPy could not allocate when it says it; all_or_nothing has already discarded every output."""
    import re

    size = re.match(r"Unable to allocate ([0-9.]+ [KMGTPE]?i?B)", str(exc))
    return fail(say("cli.out_of_memory.size", size=size.group(1)) if size else say("cli.out_of_memory"))


def _stderr_writes(lang: str) -> bool:
    """Whether standard error's encoding holds the messages of ``lang`` (its word for "error")."""
    from .explain.texts import text

    encoding = getattr(sys.stderr, "encoding", None) or "utf-8"
    try:
        text(lang, "cli.error", text="").encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _check_command(argv: list[str]) -> None:
    """A first word that is no command: the one invalid-choice line, with "did you mean"."""
    first = argv[0]
    if not first.startswith("-") and first not in COMMANDS:
        raise not_one_of(first, COMMANDS, field="COMMAND", lang=_LANG)


def _output_failed(error: InputError, lang: str) -> int:
    """Standard output failed: say so once, and let nothing buffered be written again at exit."""
    _silence_stdout()
    return fail(error.say(lang))


def _silence_stdout() -> None:
    """Point descriptor 1 at /dev/null so the interpreter's final flush of what is still buffered
    neither fails again nor prints 'Exception ignored' (Python's documented SIGPIPE recipe)."""
    stream = sys.__stdout__
    if stream is None:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def check_text_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Every text argument is UTF-8 (a name the OS passed with bytes that are not arrives with surrogate
    escapes, which no tokenizer takes); paths are exempt: any bytes may name a file."""
    command = parser._subparsers._group_actions[0].choices[args.command] if args.command else parser
    for action in command._actions:
        value = getattr(args, action.dest, None)
        metavar = str(getattr(action, "typed_metavar", None) or action.metavar or "")
        if action.dest in OUTPUT_OPTIONS or any(word in metavar for word in PATH_METAVARS):
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                check_utf8(item, field=action.option_strings[-1] if action.option_strings else metavar or action.dest)


def check_utf8(text: str, *, field: str) -> str:
    """``text`` if it is valid UTF-8 text; else one InputError naming the first bad byte."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        if 0xDC80 <= ord(bad) <= 0xDCFF:                # a byte the OS passed that is not UTF-8
            raise InputError.keyed("cli.not_utf8.byte", field=field, byte=f"0x{ord(bad) - 0xDC00:02x}",
                                   at=exc.start) from None
        raise InputError.keyed("cli.not_utf8.char", field=field, char=repr(bad), at=exc.start) from None
    return text


def check_outputs(args: argparse.Namespace) -> None:
    """Every output path is usable, and no two name the same file — before any work is done."""
    seen: dict[str, str] = {}
    for dest in OUTPUT_OPTIONS:
        value = getattr(args, dest, None)
        if not isinstance(value, str):
            continue
        option = "--" + dest.replace("_", "-")
        if dest == "figure":                           # its format follows the suffix: checked before any work
            lang = getattr(args, "lang", "en")
            check_figure(value, field=option, lang=lang if lang in ("en", "ko") else "en")
        target = os.path.realpath(check_output(value, field=option))
        if target in seen:
            raise InputError.keyed("cli.same_file", source=value, field=option, other=seen[target])
        seen[target] = option


def say_written(args: argparse.Namespace, lang: str) -> None:
    """``qkv: wrote FILE`` on standard error for each file the command wrote (not for a pipe, a
    terminal or a file reached through a descriptor such as /dev/stdout)."""
    from ._io import _through_descriptor
    from .explain.texts import text

    for dest in OUTPUT_OPTIONS:
        value = getattr(args, dest, None)
        if isinstance(value, str) and os.path.isfile(value) and not _through_descriptor(value):
            print(f"qkv: {text(lang if lang in ('en', 'ko') else 'en', 'cli.wrote', path=value)}", file=sys.stderr)


def fail(message: str) -> int:
    """Print ``qkv: error: message`` as exactly one line on standard error; return 2."""
    line = " ".join(message.split()) if any(c in message for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029") else message
    if sys.stderr is not None:
        try:
            print(f"qkv: {say('cli.error', text=line)}", file=sys.stderr)
        except (InputError, OSError):
            pass
    return 2


if __name__ == "__main__":
    sys.exit(main())
