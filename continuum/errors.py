"""One exception tree for the whole orchestrator. Library code raises these;
only the CLI entry point turns them into a message and an exit status."""

from __future__ import annotations

from dataclasses import dataclass


class ContinuumError(Exception):
    """Base of every error the orchestrator reports to the user."""


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in an experiment file: where (file and key path) and what would be valid."""

    file: str
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.key}: {self.message}"


class ConfigError(ContinuumError):
    """The experiment file is wrong; carries every issue found, not just the first."""

    def __init__(self, issues: list[ConfigIssue]):
        self.issues = list(issues)
        lines = "\n".join(f"  - {i}" for i in self.issues)
        super().__init__(f"{len(self.issues)} problem(s) in the experiment file:\n{lines}")


class UsageError(ContinuumError):
    """The command line asks for something that does not fit together, or a folder it names holds something
    else (exit 2)."""


class ProviderError(ContinuumError):
    """The host cannot provide what the plan needs (missing tool, privilege, kernel feature)."""


class VerificationError(ContinuumError):
    """The live network does not match the plan; the workload must not start."""


class CommandError(ContinuumError):
    """An external command failed: keeps argv, exit status and stderr for the report."""

    def __init__(self, argv: list[str], returncode: int, stderr: str):
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr.strip()
        detail = f": {self.stderr}" if self.stderr else ""
        super().__init__(f"command failed (exit {returncode}): {' '.join(self.argv)}{detail}")


class TraceCommandError(Exception):
    """A `continuum traces ...` command failed: the message and the exit status it ends with."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status
