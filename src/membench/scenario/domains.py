"""The generator's templates: domains of fact keys, each with probe and statement wording
and a space of plausible values to draw from.

A key template applies to every subject of its domain ("the billing api service"), so a few
dozen templates give hundreds of distinct facts. Every value kind has its own shape (a
leading word or a fixed pattern), so the generator can keep values of different facts and
users apart by their words alone.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass

DrawValue = Callable[[random.Random], str]

FIRST_NAMES = ("Ana", "Bruno", "Chiara", "Dmitri", "Elif", "Farah", "Goran", "Hana", "Ines",
               "Jonas", "Kemal", "Lucia", "Mateo", "Nadia", "Oskar", "Priya", "Quentin",
               "Rosa", "Sven", "Tariq", "Ulla", "Vikram", "Wanda", "Ximena", "Yusuf", "Zora",
               "Amara", "Bjorn", "Carmen", "Desmond", "Emeka", "Freya", "Gideon", "Helga",
               "Ivo", "Jasmin", "Kwame", "Leonie", "Mirela", "Nikhil")
LAST_NAMES = ("Costa", "Novak", "Okafor", "Lindqvist", "Haddad", "Moreau", "Tanaka",
              "Kowalski", "Fischer", "Silva", "Petrov", "Nakamura", "Duarte", "Brennan",
              "Castillo", "Ivanova", "Mensah", "Rahman", "Schulz", "Varga", "Andersen",
              "Bianchi", "Coleman", "Dietrich", "Eriksen", "Ferreira", "Gallo", "Horvat",
              "Jensen", "Keller", "Lombardi", "Marsh", "Nguyen", "Ortega", "Pereira",
              "Quinn", "Romero", "Sato", "Torres", "Weber")
WORDS = ("amber", "birch", "cobalt", "dune", "ember", "fjord", "granite", "harbor", "indigo",
         "juniper", "kestrel", "lagoon", "meadow", "nimbus", "onyx", "pine", "quartz",
         "raven", "sierra", "tundra", "umber", "willow", "yarrow", "zephyr")
TIME_ZONES = ("CET", "EET", "EST", "CST", "PST", "JST", "IST", "AEST", "BRT", "SGT")


def _zone(highest: int) -> DrawValue:
    def draw(rng: random.Random) -> str:
        area = rng.choice(("eu", "us", "ap", "sa", "ca", "me", "af", "mx"))
        side = rng.choice(("north", "south", "east", "west", "central", "northeast",
                           "southeast"))
        return f"{area}-{side}-{rng.randint(1, highest)}"
    return draw


_region = _zone(19)


def _versioned(name: str, majors: tuple[int, int], minors: int, patches: int = 20
               ) -> DrawValue:
    """name major.minor.patch, patch below `patches`."""
    return lambda rng: (f"{name} {rng.randint(*majors)}.{rng.randrange(minors)}"
                        f".{rng.randrange(patches)}")


def _person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"


def _person_with_initial(rng: random.Random) -> str:
    initial = rng.choice(string.ascii_uppercase)
    return f"{rng.choice(FIRST_NAMES)} {initial}. {rng.choice(LAST_NAMES)}"


def _phone(rng: random.Random) -> str:
    return f"+44 7700 {rng.randrange(900000, 1000000)}"


def _email(rng: random.Random) -> str:
    return f"{rng.choice(WORDS)}{rng.randrange(10, 100)}@{rng.choice(WORDS)}mail.io"


def _clock(rng: random.Random) -> str:
    return f"{rng.randrange(24):02d}:{rng.randrange(60):02d} UTC"


def _clock_in_zone(rng: random.Random) -> str:
    return f"{rng.randrange(24):02d}:{rng.randrange(60):02d} {rng.choice(TIME_ZONES)}"


def _budget(rng: random.Random) -> str:
    return f"{rng.randrange(5, 400) * 100} USD"


def _budget_to_the_dollar(rng: random.Random) -> str:
    return f"{rng.randrange(500, 40000)} USD"


def _port(rng: random.Random) -> str:
    return f"port {rng.randrange(1024, 65536)}"


def _branch(highest: int) -> DrawValue:
    return lambda rng: f"release/{rng.choice(WORDS)}-{rng.randrange(1, highest + 1)}"


def _channel(highest: int) -> DrawValue:
    return lambda rng: (f"#{rng.choice(WORDS)}-{rng.choice(WORDS)}-"
                        f"{rng.randrange(1, highest + 1)}")


@dataclass(frozen=True)
class KeyTemplate:
    """One kind of fact about a subject. Texts take {subject}; statements also {value}."""

    name: str
    literal: str
    paraphrase: str
    statement: str  # the first time the user says it
    change: str  # a later change
    forget: str  # the deletion request: never the value itself
    draw: DrawValue
    # A larger space of the same kind, drawn from once `draw`'s is used up (a deployment of
    # many users with hundreds of facts each); small stories never reach it.
    wider: DrawValue | None = None


@dataclass(frozen=True)
class Domain:
    name: str
    subjects: tuple[str, ...]
    keys: tuple[KeyTemplate, ...]


_SERVICES = tuple(f"{base} {kind}" for base in (
    "billing", "search", "checkout", "auth", "reports", "ingest", "mailer", "payments",
    "gateway", "catalog", "inventory", "notifications", "analytics", "scheduler", "exporter",
    "uploader", "ledger", "pricing", "feeds", "shipping", "invoicing", "loyalty", "media",
    "geo", "audit") for kind in ("api", "worker", "cron", "web"))
_AREAS = ("billing", "search", "mobile app", "onboarding", "data platform", "design system",
          "observability", "security review", "public API", "admin console", "growth",
          "partner integrations", "localization", "accessibility", "documentation",
          "infrastructure", "payments", "support tooling", "experimentation", "compliance")
_CONTACTS = ("support desk", "escalation line", "hosting vendor", "payment processor",
             "security team", "legal team", "data protection officer", "office manager",
             "CDN vendor", "auditor", "recruiter", "insurance broker")
_JOBS = ("standup", "deploy window", "nightly backup", "retro", "planning meeting",
         "database vacuum", "certificate renewal", "log rotation", "cache warmup",
         "report export", "demo", "office hours")
_REPOS = ("web", "mobile", "infra", "design", "docs", "data", "ml", "sdk", "cli", "admin",
          "edge", "firmware", "website", "analytics", "tooling")
_ACCOUNTS = ("cloud account", "CI minutes", "error tracker", "log storage", "email provider",
             "design tools", "on-call pager", "test devices")

DOMAINS: tuple[Domain, ...] = (
    Domain("infrastructure", _SERVICES, (
        KeyTemplate("region", "Which region does the {subject} service deploy to?",
                    "Where do the {subject} machines live these days?",
                    "The {subject} service deploys to {value}.",
                    "We moved the {subject} service to {value}.",
                    "Please forget where the {subject} service deploys.", _region,
                    _zone(999)),
        KeyTemplate("runtime", "Which Node version does the {subject} service run on?",
                    "What does {subject} execute on now?",
                    "The {subject} service runs on {value}.",
                    "We upgraded the {subject} service to {value}.",
                    "Please forget which runtime the {subject} service uses.",
                    _versioned("Node", (14, 25), 20),
                    _versioned("Node", (14, 25), 20, 1000)),
        KeyTemplate("database", "Which Postgres version does the {subject} service use?",
                    "What is the store behind {subject} at?",
                    "The {subject} service uses {value}.",
                    "The {subject} service now uses {value}.",
                    "Please forget the database of the {subject} service.",
                    _versioned("Postgres", (9, 17), 10),
                    _versioned("Postgres", (9, 17), 10, 1000)),
        KeyTemplate("port", "Which port does the {subject} service listen on?",
                    "Where do I point curl for {subject}?",
                    "The {subject} service listens on {value}.",
                    "The {subject} service moved to {value}.",
                    "Please forget how to reach the {subject} service.", _port),
    )),
    Domain("people", _AREAS, (
        KeyTemplate("owner", "Who owns the {subject} area?",
                    "Whom do I ask about {subject} decisions?",
                    "{value} owns the {subject} area.",
                    "{value} took over the {subject} area.",
                    "Please forget who owns the {subject} area.", _person,
                    _person_with_initial),
        KeyTemplate("reviewer", "Who reviews pull requests for {subject}?",
                    "Whose approval do {subject} changes need?",
                    "{value} reviews pull requests for {subject}.",
                    "From now on {value} reviews pull requests for {subject}.",
                    "Please forget the {subject} reviewer.", _person,
                    _person_with_initial),
    )),
    Domain("contacts", _CONTACTS, (
        KeyTemplate("phone", "What is the phone number of the {subject}?",
                    "How do I ring the {subject}?",
                    "The {subject} phone number is {value}.",
                    "The {subject} has a new phone number: {value}.",
                    "Please forget the phone number of the {subject}.", _phone),
        KeyTemplate("email", "What is the email address of the {subject}?",
                    "Where do I write to reach the {subject}?",
                    "The {subject} email address is {value}.",
                    "The {subject} changed its email address to {value}.",
                    "Please forget the email address of the {subject}.", _email),
    )),
    Domain("schedule", _JOBS, (
        KeyTemplate("time", "What time is the {subject}?",
                    "When should I be around for the {subject}?",
                    "The {subject} is at {value}.",
                    "The {subject} moved to {value}.",
                    "Please forget when the {subject} happens.", _clock,
                    _clock_in_zone),
    )),
    Domain("tooling", _REPOS, (
        KeyTemplate("formatter", "Which ruff version does the {subject} repo pin?",
                    "What lints {subject} code?",
                    "The {subject} repo pins {value}.",
                    "The {subject} repo now pins {value}.",
                    "Please forget the {subject} linter pin.", _versioned("ruff", (1, 9), 30),
                    _versioned("ruff", (1, 9), 30, 1000)),
        KeyTemplate("release_branch", "Which release branch does the {subject} repo ship from?",
                    "Where do {subject} hotfixes land before they go out?",
                    "The {subject} repo ships from {value}.",
                    "The {subject} repo switched to shipping from {value}.",
                    "Please forget the {subject} release branch.", _branch(99),
                    _branch(999)),
        KeyTemplate("channel", "Which Slack channel gets the {subject} repo alerts?",
                    "Where do I watch for {subject} breakage?",
                    "The {subject} repo alerts go to {value}.",
                    "The {subject} repo alerts now go to {value}.",
                    "Please forget where the {subject} alerts go.", _channel(9),
                    _channel(99)),
    )),
    Domain("budget", _ACCOUNTS, (
        KeyTemplate("monthly_budget", "What is the monthly budget for the {subject}?",
                    "How much may we spend on the {subject}?",
                    "The monthly budget for the {subject} is {value}.",
                    "The monthly budget for the {subject} is now {value}.",
                    "Please forget the {subject} budget.", _budget,
                    _budget_to_the_dollar),
    )),
)

FILLER_REPLY = "Here is the relevant code:"
ACKNOWLEDGEMENT = "Noted: {value}."
DELETION_REPLY = "Understood, it is forgotten."
DISTRACTORS = (
    "Why does the deploy pipeline take so long?",
    "How do I write a migration that adds a column safely?",
    "How do I paginate a large result set?",
    "How do I profile a slow query?",
    "Why is this test flaky?",
    "What is the best way to version our public API?",
    "How do I roll back a failed deploy?",
    "Why does the release script fail on tags?",
    "How do I rebase my branch without losing commits?",
    "How do I convert a timestamp to another time zone?",
    "Why do email notifications arrive twice?",
    "How do I add a feature flag for a gradual rollout?",
    "Why does the service restart under load?",
    "How do I cache expensive queries?",
    "Why is the connection pool exhausted?",
    "How do I mock the clock in a unit test?",
    "How should errors be logged in production?",
    "Why does the build break only on CI?",
    "How do I retry a request with backoff?",
    "How do I find a memory leak in a worker?",
    "Why is the dashboard slow to load?",
    "How do I keep secrets out of the repository?",
    "How do I measure test coverage?",
    "Why does the cron job run at the wrong hour?",
    "Which port should a local dev server use?",
    "How do I review a large pull request?",
)
