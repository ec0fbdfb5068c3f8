"""Topic modules of ``companion.calc``. Import from ``companion.calc``, not from here."""
