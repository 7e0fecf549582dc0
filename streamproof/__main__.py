"""``python -m streamproof``: the same as the ``streamproof`` command."""

from streamproof.cli import main

if __name__ == "__main__":
    main()
