"""A scripted ATOMR model for the demo questions: plans written in the released trees' JSON
shape, and a strict "reader" for every other stage.

The reader answers a node only when the knowledge that supports the answer is in the prompt
it was given (a passage sentence from Chroma, a fact from the knowledge graph, or the answers
of the child/sibling questions). Otherwise it says Unknown. So a correct final answer proves
that the graph retrieved the right knowledge, resolved the ``[i]`` references, and fed both
to the executor.

``demo_model(settings)`` is a model factory for ``atomgraph demo --model-factory
atomr_demo_script:demo_model`` (``tests/`` is on ``sys.path`` under pytest).
"""

from __future__ import annotations

from dataclasses import dataclass

from atomgraph.testing import ScriptedChatModel, answer_reply, atomr_scripted_model

Q1 = "What is the name of the church in Albert Einstein's birthplace whose steeple is the tallest of any church in the world?"
Q2 = "In which city did Werner Heisenberg's doctoral advisor die?"
Q3 = ("Which was founded first: the school where Albert Einstein earned his teaching diploma, "
      "or the university where Niels Bohr earned his doctorate?")
Q4 = ("Who was born first, the physicist who stated the uncertainty principle or the physicist after whom "
      "the wave equation of quantum mechanics is named?")
Q5 = "Which of Albert Einstein, Max Planck and Niels Bohr was born in a national capital?"
Q6 = "In what year was the university where Max Planck earned his doctorate founded?"
Q7 = ("What is the area, in square kilometres, of the city where Marie Curie's husband was born and was later "
      "killed in a street accident?")
Q8 = "In which year did Marie Curie's elder daughter receive the Nobel Prize in Chemistry?"

PLANS: dict[str, dict] = {
    Q1: {
        Q1: ["1. Where was Albert Einstein born?",
             "2. Which church in [1] has the tallest steeple of any church in the world?"],
        "1. Where was Albert Einstein born?": 'Relate("Albert Einstein", "place of birth")',
        "2. Which church in [1] has the tallest steeple of any church in the world?":
            'Search("church in [1]", "tallest steeple of any church in the world")',
    },
    Q2: {
        Q2: ["1. Who was the doctoral advisor of Werner Heisenberg?", "2. In which city did [1] die?"],
        "1. Who was the doctoral advisor of Werner Heisenberg?": 'Relate("Werner Heisenberg", "doctoral advisor")',
        "2. In which city did [1] die?": 'Relate([1], "place of death")',
    },
    Q3: {
        Q3: ["1. When was the school where Albert Einstein earned his teaching diploma founded?",
             "2. When was the university where Niels Bohr earned his doctorate founded?",
             "3. Given [1] and [2], which was founded first?"],
        "1. When was the school where Albert Einstein earned his teaching diploma founded?":
            ["4. Which school awarded Albert Einstein his teaching diploma?", "5. When was [4] founded?"],
        "2. When was the university where Niels Bohr earned his doctorate founded?":
            ["6. At which university did Niels Bohr earn his doctorate?", "7. When was [6] founded?"],
        "3. Given [1] and [2], which was founded first?": "[DR]",
        "4. Which school awarded Albert Einstein his teaching diploma?": 'Relate("Albert Einstein", "teaching diploma")',
        "5. When was [4] founded?": 'Relate([4], "inception")',
        "6. At which university did Niels Bohr earn his doctorate?": 'Relate("Niels Bohr", "educated at")',
        "7. When was [6] founded?": 'Relate([6], "inception")',
    },
    Q4: {
        Q4: ["1. Which physicist stated the uncertainty principle?",
             "2. After which physicist is the wave equation of quantum mechanics named?",
             "3. When was [1] born?", "4. When was [2] born?",
             "5. Given [3] and [4], who was born first, [1] or [2]?"],
        "1. Which physicist stated the uncertainty principle?": 'Relate("uncertainty principle", "discoverer or inventor")',
        "2. After which physicist is the wave equation of quantum mechanics named?":
            'Relate("wave equation of quantum mechanics", "named after")',
        "3. When was [1] born?": 'Relate([1], "date of birth")',
        "4. When was [2] born?": 'Relate([2], "date of birth")',
        "5. Given [3] and [4], who was born first, [1] or [2]?": "[DR]",
    },
    Q5: {
        Q5: ["1. Where were Albert Einstein, Max Planck and Niels Bohr born?",
             "2. Which of [1] is the capital of a country?",
             "3. Given [1] and [2], which of Albert Einstein, Max Planck and Niels Bohr was born in [2]?"],
        "1. Where were Albert Einstein, Max Planck and Niels Bohr born?":
            'Relate("Albert Einstein, Max Planck, Niels Bohr", "place of birth")',
        "2. Which of [1] is the capital of a country?": 'Filter([1], "capital of a country")',
        "3. Given [1] and [2], which of Albert Einstein, Max Planck and Niels Bohr was born in [2]?": "[DR]",
    },
    Q6: {
        Q6: ["1. At which university did Max Planck earn his doctorate?", "2. In what year was [1] founded?"],
        "1. At which university did Max Planck earn his doctorate?": 'Relate("Max Planck", "doctorate")',
        "2. In what year was [1] founded?": 'Relate([1], "inception")',
    },
    Q7: {
        Q7: ["1. Who was Marie Curie's husband?", "2. In which city was [1] born?", "3. What is the area of [2]?"],
        "1. Who was Marie Curie's husband?": 'Relate("Marie Curie", "spouse")',
        "2. In which city was [1] born?": 'Relate([1], "place of birth")',
        "3. What is the area of [2]?": 'Relate([2], "area")',
    },
    Q8: {
        Q8: ["1. Who are the children of Marie Curie?", "2. When was [1] born?",
             "3. Given [1] and [2], which of [1] was born first?",
             "4. In which year did [3] receive the Nobel Prize in Chemistry?"],
        "1. Who are the children of Marie Curie?": 'Relate("Marie Curie", "child")',
        "2. When was [1] born?": 'Relate([1], "date of birth")',
        "3. Given [1] and [2], which of [1] was born first?": "[DR]",
        "4. In which year did [3] receive the Nobel Prize in Chemistry?": 'Relate([3], "Nobel Prize in Chemistry")',
    },
}


@dataclass(frozen=True)
class Reading:
    """Answer ``answers`` to a node whose question (a [DR] node's with its references as written, any
    other's resolved) starts with ``question``, when every string in ``needs`` is in the knowledge
    (or the question/answer pairs) it was shown."""

    question: str
    needs: tuple[str, ...]
    answers: tuple[str, ...]


def _r(question: str, needs: list[str], *answers: str) -> Reading:
    return Reading(question, tuple(needs), answers)


READINGS: list[Reading] = [
    # Q1: the birthplace from the KG, the church from a passage only Chroma holds.
    _r("Where was Albert Einstein born?", ["(Albert Einstein, place of birth, Ulm)"], "Ulm"),
    _r("Which church in Ulm has the tallest steeple", ["Ulm Minster | ", "making it the tallest church in the world"],
       "Ulm Minster"),
    _r(Q1, ['"Ulm Minster"]'], "Ulm Minster"),
    # Q2: two KG hops.
    _r("Who was the doctoral advisor of Werner Heisenberg?", ["(Werner Heisenberg, doctoral advisor, Arnold Sommerfeld)"],
       "Arnold Sommerfeld"),
    _r("In which city did Arnold Sommerfeld die?", ["(Arnold Sommerfeld, place of death, Munich)"], "Munich"),
    _r(Q2, ['"Munich"]'], "Munich"),
    # Q3: passage for the diploma, KG for the founding years, [DR] to compare.
    _r("Which school awarded Albert Einstein his teaching diploma?", ["received his teaching diploma from it in 1900"],
       "ETH Zurich"),
    _r("When was ETH Zurich founded?", ["(ETH Zurich, inception, 1855)"], "1855"),
    _r("At which university did Niels Bohr earn his doctorate?", ["(Niels Bohr, educated at, University of Copenhagen)"],
       "University of Copenhagen"),
    _r("When was University of Copenhagen founded?", ["(University of Copenhagen, inception, 1479)"], "1479"),
    _r("When was the school where Albert Einstein earned his teaching diploma founded?",
       ['"ETH Zurich"]', '"1855"]'], "1855"),
    _r("When was the university where Niels Bohr earned his doctorate founded?",
       ['"University of Copenhagen"]', '"1479"]'], "1479"),
    _r("Given [1] and [2], which was founded first?",
       ["teaching diploma founded? A:", '"1855"]', "doctorate founded? A:", '"1479"]'], "University of Copenhagen"),
    _r(Q3, ['"University of Copenhagen"]'], "University of Copenhagen"),
    # Q4: KG relations, dates, [DR] comparison.
    _r("Which physicist stated the uncertainty principle?",
       ["(uncertainty principle, discoverer or inventor, Werner Heisenberg)"], "Werner Heisenberg"),
    _r("After which physicist is the wave equation of quantum mechanics named?",
       ["is the wave equation of quantum mechanics"], "Erwin Schrödinger"),
    _r("When was Werner Heisenberg born?", ["(Werner Heisenberg, date of birth, 5 December 1901)"], "5 December 1901"),
    _r("When was Erwin Schrödinger born?", ["(Erwin Schrödinger, date of birth, 12 August 1887)"], "12 August 1887"),
    _r("Given [3] and [4], who was born first, [1] or [2]?",
       ['"5 December 1901"]', '"12 August 1887"]'], "Erwin Schrödinger"),
    _r(Q4, ['"Erwin Schrödinger"]'], "Erwin Schrödinger"),
    # Q5: Relate over three people, Filter over their birthplaces, [DR] back to the person.
    _r("Where were Albert Einstein, Max Planck and Niels Bohr born?",
       ["(Albert Einstein, place of birth, Ulm)", "(Max Planck, place of birth, Kiel)",
        "(Niels Bohr, place of birth, Copenhagen)"], "Ulm", "Kiel", "Copenhagen"),
    _r("Which of Ulm, Kiel, Copenhagen is the capital of a country?", ["(Copenhagen, capital of, Denmark)"],
       "Copenhagen"),
    _r("Given [1] and [2], which of Albert Einstein, Max Planck and Niels Bohr was born in [2]?",
       ['A: ["Ulm", "Kiel", "Copenhagen"]', "capital of a country? A:", '"Copenhagen"]'], "Niels Bohr"),
    _r(Q5, ['"Niels Bohr"]'], "Niels Bohr"),
    # Q6: passage for the doctorate, KG (through an alias) for the year.
    _r("At which university did Max Planck earn his doctorate?", ["earned his doctorate at the University of Munich"],
       "University of Munich"),
    _r("In what year was University of Munich founded?", ["(Ludwig Maximilian University of Munich, inception, 1472)"],
       "1472"),
    _r(Q6, ['"1472"]'], "1472"),
    # Q7: three KG hops, the last a quantity with its unit.
    _r("Who was Marie Curie's husband?", ["(Marie Curie, spouse, Pierre Curie)"], "Pierre Curie"),
    _r("In which city was Pierre Curie born?", ["(Pierre Curie, place of birth, Paris)"], "Paris"),
    _r("What is the area of Paris?", ["(Paris, area, 105.4 square kilometre)"], "105.4 square kilometres"),
    _r(Q7, ['"105.4 square kilometres"]'], "105.4 square kilometres"),
    # Q8: KG children and birth dates, the prize year from a passage.
    _r("Who are the children of Marie Curie?", ["(Marie Curie, child, Irène Joliot-Curie)", "(Marie Curie, child, Ève Curie)"],
       "Irène Joliot-Curie", "Ève Curie"),
    # node 2 fans out: one Relate per child
    _r("When was Irène Joliot-Curie born?", ["(Irène Joliot-Curie, date of birth, 12 September 1897)"], "12 September 1897"),
    _r("When was Ève Curie born?", ["(Ève Curie, date of birth, 6 December 1904)"], "6 December 1904"),
    _r("Given [1] and [2], which of [1] was born first?",
       ['"Irène Joliot-Curie", "Ève Curie"]', '"12 September 1897", "6 December 1904"]'], "Irène Joliot-Curie"),
    _r("In which year did Irène Joliot-Curie receive the Nobel Prize in Chemistry?",
       ["received the Nobel Prize in Chemistry in 1935"], "1935"),
    _r(Q8, ['"1935"]'], "1935"),
]

_HUMAN_STARTS = ("Retrieved Knowledge:", "questions and answers:")


def node_question(text: str) -> str:
    """The question a stage prompt asks (its last ``Question:`` line)."""
    tail = text.rsplit("\nQuestion: ", 1)[-1]
    return " ".join(tail.split("\nAnswer:", 1)[0].split())


def shown_knowledge(text: str) -> str:
    """The part of the prompt a node was given: from its own knowledge or Q/A block on (the
    system prompt's worked examples are excluded)."""
    start = max(text.rfind(marker) for marker in _HUMAN_STARTS)
    return " ".join(text[max(start, 0):].split())


def read(stage: str, text: str) -> str:
    """The reader: the scripted answer when its knowledge is in the prompt, else Unknown."""
    question = node_question(text).casefold()
    knowledge = shown_knowledge(text)
    for r in READINGS:
        if question.startswith(" ".join(r.question.split()).casefold()):
            if all(n in knowledge for n in r.needs):
                return answer_reply(*r.answers)
            return answer_reply(paraphrase="Unknown")
    return answer_reply(paraphrase="Unknown")


def demo_model(settings=None, *, sources_reply: str = "Wikipedia, Wikidata") -> ScriptedChatModel:
    """A model factory (takes the settings) playing every ATOMR role for the demo questions."""
    return atomr_scripted_model(PLANS, answer=read, sources_reply=sources_reply)

