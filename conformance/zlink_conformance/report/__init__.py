"""Reports of a run: console progress and summary, JSON, JUnit XML."""

from .console import ConsoleReporter, print_catalogue, print_summary
from .junit import junit_xml, write_junit
from .outputs import write_json

__all__ = [
    "ConsoleReporter",
    "junit_xml",
    "print_catalogue",
    "print_summary",
    "write_json",
    "write_junit",
]
