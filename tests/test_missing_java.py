"""Without Java, a command that starts Spark says so first, in one line, rather than blame Spark's master."""
from __future__ import annotations

import shutil
from pathlib import Path

from tests.projects import schemaflow


def test_a_plan_without_java_names_java_first_and_what_to_do(example: Path, tmp_path: Path):
    no_java = tmp_path / "bin"  # a PATH with git alone on it
    no_java.mkdir()
    (no_java / "git").symlink_to(shutil.which("git") or "git")
    for java_home, missing in ((None, "JAVA_HOME is not set and no java is on the PATH"),
                               (str(tmp_path / "jdk"), f"there is no {tmp_path / 'jdk' / 'bin' / 'java'}")):
        ran = schemaflow(example, "plan", env={"JAVA_HOME": java_home, "PATH": str(no_java), "SPARK_HOME": None})
        assert ran.returncode == 1
        assert ran.stderr.splitlines()[-1] == (f"error: Spark needs Java, and there is none here ({missing}): install "
                                              "Java 17 (a JDK), or set JAVA_HOME to one; nothing was run")
        assert "Traceback" not in ran.stderr and "spark.master" not in ran.stderr
