"""Procedural "simple stories" (sessa spec §7): the offline substitute for SimpleStories.

A story introduces a cast at its start (a hero and a friend with names, kinds and pronouns, an object with
an adjective and a colour, a place) and a small probabilistic grammar then writes 5-10 sentences that keep
referring back to them (by name, pronoun, "the <colour> <object>", "the <place>"), so the text has
medium-range dependencies a model can use; the ending returns to the place and the object. Story ``i`` of
seed ``s`` is a pure function of (s, i) (its own ``random.Random``), so a larger corpus extends a smaller
one. Train/val/test are split by story id, 98/1/1.
"""

from __future__ import annotations

import random

from .story_words import (
    ADJECTIVES,
    ANIMALS,
    COLOURS,
    FEELINGS,
    FOODS,
    MOVES,
    NAMES_HE,
    NAMES_SHE,
    OBJECTS,
    PLACES,
    SOUNDS,
    VERBS,
)

TIMES = (
    "One morning|One day|Once upon a time|Long ago|One sunny day|On a rainy day|One evening|Last summer|"
    "One winter night|Early one spring"
).split("|")
WEATHER = (
    "the sun was warm|the wind was cold|it was raining|snow was falling|the sky was clear|fog was everywhere".split("|")
)
OPENINGS = (
    "{time}, {hk_a} named {H} lived near the {P}.",
    "{time}, there was {hk_a} called {H}.",
    "{H} was {hk_a} who loved the {P}.",
)
INTROS = (
    "{H} had {a_o}.",
    "{h_cap} had {a_o} and a friend named {F}.",
    "Every day, {H} played with {a_o}.",
)
MIDDLE = (
    "{H} {verb} {the_o} in the {P}.",
    "{h_cap} felt {feel} when {h} saw {the_o}.",
    "{F} the {fk} came to visit {H}.",
    "{H} and {F} {move} to the {P} together.",
    '{F} asked, "{H}, where did you get {the_o}?"',
    '"I {verb} it," said {H} with a smile.',
    "{h_cap} showed {the_o} to {F}.",
    "{F} felt {feel} and gave {H} some {food}.",
    "Outside, {weather}, but {H} did not mind.",
    "{H} held {the_o} close to {his} heart.",
    "{f_cap} said that {the_o} was very {adj}.",
    "They ate {food} and talked about {the_o}.",
    "Then {the_o} rolled away, and {H} {move} after it.",
    "{H} looked for {the_o} behind every tree in the {P}.",
    "{F} helped {H} because {f} was a good friend.",
    "At last, {h} found {the_o} under a {adj} {obj2}.",
    "{H} was {feel}, and {F} was {feel2}.",
    "Suddenly there was a {sound} near the {P}, and {H} felt {feel}.",
    "{F} heard a {sound} and {move} to find {H}.",
    "{H} put {the_o} next to a {adj} {obj2}.",
    '"Look at {the_o}!" said {F}. "It is so {adj}."',
    "The {P} was {adj} and full of {food}.",
)
ENDINGS = (
    "From that day on, {H} and {F} shared {the_o} in the {P}.",
    "{H} went home from the {P}, {feel} and tired, with {the_o}.",
    "And {H} never lost {the_o} again.",
    "{F} and {H} stayed friends forever, and {the_o} stayed in the {P}.",
)


CAST_WORDS = ("he", "she", "his", "her", "boy", "girl", "a", "an")  # what _cast fills in besides the tables


def _cast(rng: random.Random) -> dict[str, str]:
    he = rng.random() < 0.5
    name = rng.choice(NAMES_HE if he else NAMES_SHE)
    kind = ("boy" if he else "girl") if rng.random() < 0.3 else rng.choice(ANIMALS)
    f_he = rng.random() < 0.5
    friend = name
    while friend == name:
        friend = rng.choice(NAMES_HE if f_he else NAMES_SHE)
    obj, colour = rng.choice(OBJECTS), rng.choice(COLOURS)
    return {
        "H": name,
        "h": "he" if he else "she",
        "his": "his" if he else "her",
        "hk_a": ("an " if kind[0] in "aeiou" else "a ") + kind,
        "F": friend,
        "f": "he" if f_he else "she",
        "fk": rng.choice(ANIMALS),
        "the_o": f"the {colour} {obj}",
        "a_o": ("an " if colour[0] in "aeiou" else "a ") + f"{colour} {obj}",
        "obj": obj,
        "P": rng.choice(PLACES),
    }


def _other(rng: random.Random, table: tuple[str, ...], avoid: str) -> str:
    while (word := rng.choice(table)) == avoid:
        pass
    return word


def _sentence(rng: random.Random, template: str, cast: dict[str, str]) -> str:
    fill = dict(
        cast,
        time=rng.choice(TIMES),
        weather=rng.choice(WEATHER),
        verb=rng.choice(VERBS),
        move=rng.choice(MOVES),
        feel=rng.choice(FEELINGS),
        feel2=rng.choice(FEELINGS),
        food=rng.choice(FOODS),
        sound=rng.choice(SOUNDS),
        adj=rng.choice(ADJECTIVES),
        obj2=_other(rng, OBJECTS, cast["obj"]),
        h_cap=cast["h"].capitalize(),
        f_cap=cast["f"].capitalize(),
    )
    return template.format(**fill)


def story(seed: int, i: int) -> str:
    """Story ``i`` of corpus ``seed``: an opening, the object's introduction, 5-10 middle sentences about the
    same cast, an ending that returns to the object."""
    rng = random.Random(f"procedural-stories:{seed}:{i}")
    cast = _cast(rng)
    templates = [rng.choice(OPENINGS), rng.choice(INTROS)] + [rng.choice(MIDDLE) for _ in range(rng.randint(5, 10))]
    templates.append(rng.choice(ENDINGS))
    return " ".join(_sentence(rng, t, cast) for t in templates)


def split_of(i: int) -> str:
    """98/1/1 by story id."""
    return {0: "test", 1: "val"}.get(i % 100, "train")


def stories(seed: int, n: int) -> dict[str, list[str]]:
    """The corpus of ``n`` stories split by id: {"train": [...], "val": [...], "test": [...]}."""
    out: dict[str, list[str]] = {"train": [], "val": [], "test": []}
    for i in range(n):
        out[split_of(i)].append(story(seed, i))
    return out


def vocabulary() -> set[str]:
    """Every word the grammar can emit (case-folded, punctuation stripped): the corpus's word vocabulary."""
    words: set[str] = set()
    for table in (
        NAMES_HE,
        NAMES_SHE,
        ANIMALS,
        PLACES,
        OBJECTS,
        ADJECTIVES,
        COLOURS,
        FEELINGS,
        FOODS,
        VERBS,
        MOVES,
        SOUNDS,
    ):
        words |= {w.lower() for w in table}
    words |= set(CAST_WORDS)
    for text in (*TIMES, *WEATHER, *OPENINGS, *INTROS, *MIDDLE, *ENDINGS):
        for w in text.split():
            w = w.strip('.,"?!').lower()
            if w and "{" not in w:
                words.add(w)
    return words
