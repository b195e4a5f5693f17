"""The ZLink conformance kit: a language-neutral suite that runtimes run against
themselves through an adapter process."""
