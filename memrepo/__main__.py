"""``python -m memrepo``: the ``memory`` command, for when its script is not on PATH."""

from memrepo.scripts.fastpath import main

if __name__ == "__main__":
    main()
