"""Exercise definitions (given data by seed, expected answers, hints), one module per chapter.

Each module calls ``companion.grading.register(Exercise(...))``; ``companion.grading`` loads
them all on first use.
"""
