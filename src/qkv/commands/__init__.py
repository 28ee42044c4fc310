"""Sub-commands of the `qkv` command line, one module each.

Each module defines ``register(subparsers)``, which adds its parser and sets
``func=handler``; ``handler(args) -> int`` returns the exit status.
"""

COMMANDS = ["example", "explain", "inspect", "embed", "generate", "bench", "masks", "heads", "serve", "train", "translate", "ring", "practice", "why", "doctor"]
