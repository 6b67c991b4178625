"""The BlendQA pack (ATOMR Table 3): planner demonstrations, per-stage demonstrations and answer rules.

A BlendQA question joins two sub-questions answered from different sources through a bridging
entity: KG-Web (Wikidata facts, then news found with Google), KG-Text (Wikidata, then a
Wikipedia question of Natural Questions) and Web-Text (a description found on the web, then
Wikipedia). The plans find the bridging entity first (a Relate on a Wikidata relation, or a
Search on a description) and ask the outer question about it.

BlendQA has no train or dev split, and the authors' demonstrations are BlendQA questions that
their 445-question evaluation also scores. Ours are written, in our words, on a declared
demonstration subset of BlendQA (21 questions: 8 KG-Web, 7 KG-Text, 6 Web-Text; each ``Demo``
records its file and id), and every BlendQA run, of any method, leaves that subset out and says how many it left out
(``DatasetSetting.demonstrations_in_split``): the Table 3 rows are scored on the same 424
questions. Counts follow the authors' BlendQA prompts: 21 planner demonstrations; Search 5,
Relate 8, Filter 2, child reasoning 4, direct RAG 7, closed book 3 (our sibling stage has 2).
Direct RAG may answer Unknown, as theirs does.
"""

from __future__ import annotations

from atomgraph.prompts.atomr.packs.common import Demo
from atomgraph.prompts.atomr.packs.demos import CHILD, SIBLING, blendqa_file, closed, from_pairs, knowledge, retrieved

# planner question -> (file, id): the declared demonstration subset, where each question comes from
PLAN_SOURCES: dict[str, tuple[str, str]] = {}
_QUESTIONS: dict[str, str] = {}  # id -> question


def _q(example_id: str, question: str) -> str:
    PLAN_SOURCES[question] = (blendqa_file(example_id), example_id)
    _QUESTIONS[example_id] = question
    return question


def _src(example_id: str) -> tuple[str, str, str]:
    """(file, id, question) of a question of the demonstration subset."""
    return blendqa_file(example_id), example_id, _QUESTIONS[example_id]


def _bridge(example_id: str, question: str, inner: tuple[str, str], outer: tuple[str, str]):
    """The usual BlendQA plan: find the bridging entity, then ask the outer question about it."""
    (q1, c1), (q2, c2) = inner, outer
    return _q(example_id, question), {question: [f"1. {q1}", f"2. {q2}"], f"1. {q1}": c1, f"2. {q2}": c2}


# --- planner: the 21 questions of the demonstration subset --------------------------------------------
BLENDQA_PLAN = [
    # KG-Web: a Wikidata relation gives the bridging entity, news answers the outer question
    _bridge("kg-web_132-30",
            "When was the the Iraq politician born on 1937/4/28 hanged to death?",
            ("Which Iraqi politician was born on 1937/4/28?", 'Search("Iraqi politician", "born 1937/4/28")'),
            ("When was [1] hanged?", 'Relate([1], "date of execution")')),
    _bridge("kg-web_132-5",
            "In which newspaper did the spouse of Jeb Bush publish an op-ed on domestic violence in May 2015?",
            ("Who is Jeb Bush's spouse?", 'Relate("Jeb Bush", "spouse")'),
            ("Where did [1] publish her May 2015 op-ed?", 'Relate([1], "newspaper of May 2015 op-ed")')),
    _bridge("kg-web_132-15",
            "On January 17, 2024, whose stolen paintings were found in the Belgium province that owns the Odyssey Arena?",
            ("Which province owns the Odyssey Arena?", 'Relate("Odyssey Arena", "owned by")'),
            ("Whose stolen paintings were found in [1] on January 17, 2024?", 'Relate([1], "stolen paintings found")')),
    _bridge("kg-web_132-89",
            "How did the American actor born on 1991/3/26 appear on the Emmys red carpet?",
            ("Which American actor was born on 1991/3/26?", 'Search("American actor", "born 1991/3/26")'),
            ("How did [1] appear on the Emmys red carpet?", 'Relate([1], "Emmys red carpet look")')),
    _bridge("kg-web_132-23",
            "When did the ransomware attack on the port of the birth city of Toshio Suzuki?",
            ("Where was Toshio Suzuki born?", 'Relate("Toshio Suzuki", "place of birth")'),
            ("When did the ransomware attack on [1]'s port begin?", 'Relate([1], "port ransomware attack date")')),
    # KG-Web, second kind: the news gives the outer question, the bridging entity comes from Wikidata
    _bridge("kg-web_132-113",
            "Whom did the performer of the song 'safe & sound' endorse for president in 2024?",
            ("Who performed Safe & Sound?", 'Relate("Safe & Sound", "performer")'),
            ("Whom did [1] endorse for president in 2024?", 'Relate([1], "2024 presidential endorsement")')),
    _bridge("kg-web_132-123",
            "Where was the cast member of 'You've Been Trumped' shot on July 13?",
            ("Who is a cast member of You've Been Trumped?", 'Relate("You\'ve Been Trumped", "cast member")'),
            ("Where was [1] shot on July 13?", 'Relate([1], "place he was shot on July 13")')),
    _bridge("kg-web_132-60",
            "Is the stepparent of Ella Emhoff considering a visit to the US-Mexico border in Arizona in September 2024?",
            ("Who is Ella Emhoff's stepparent?", 'Relate("Ella Emhoff", "stepparent")'),
            ("Is [1] considering an Arizona border visit in September 2024?", 'Relate([1], "Arizona border visit plans")')),
    # KG-Text: Wikidata facts give the bridging entity, a Wikipedia passage answers
    _bridge("text-kg_163-6",
            "When was the constitutional republic with nickname Confederacy formed?",
            ("Which republic is nicknamed Confederacy?", 'Search("republic nicknamed Confederacy")'),
            ("When was [1] formed?", 'Relate([1], "date of formation")')),
    (_q("text-kg_163-8", "Who wins in a match between the American actor born on 1956/5/17 or Floyd Mayweather?"), {
        "Who wins in a match between the American actor born on 1956/5/17 or Floyd Mayweather?": [
            "1. Who is the American actor born on 1956/5/17?", "2. What is [1]'s boxing record?",
            "3. What is Floyd Mayweather's boxing record?", "4. Given [2] and [3], who would win?"],
        "1. Who is the American actor born on 1956/5/17?": 'Search("American actor", "born 1956/5/17")',
        "2. What is [1]'s boxing record?": 'Relate([1], "boxing record")',
        "3. What is Floyd Mayweather's boxing record?": 'Relate("Floyd Mayweather Jr.", "boxing record")',
        "4. Given [2] and [3], who would win?": "[DR]",
    }),
    _bridge("text-kg_163-9",
            "How many seasons are there of the television series created by Joshua Brand and started on 1990/7/12?",
            ("Which series by Joshua Brand started on 1990/7/12?", 'Search("television series by Joshua Brand", "started 1990/7/12")'),
            ("How many seasons does [1] have?", 'Relate([1], "number of seasons")')),
    _bridge("text-kg_163-12",
            "How many American casualties occurred in the battle involving Frank Peak Akers?",
            ("Which battle involved Frank Peak Akers?", 'Relate("Frank Peak Akers", "conflict")'),
            ("How many American casualties occurred in [1]?", 'Relate([1], "American casualties")')),
    (_q("text-kg_163-18", "Who played Lorenzo Bartolini in the film directed by Gary Winick, published on 2010/4/25?"), {
        "Who played Lorenzo Bartolini in the film directed by Gary Winick, published on 2010/4/25?": [
            "1. Which Gary Winick film was published on 2010/4/25?", "2. Who played Lorenzo Bartolini in [1]?"],
        "1. Which Gary Winick film was published on 2010/4/25?": [
            "3. Which films did Gary Winick direct?", "4. Which of [3] was published on 2010/4/25?"],
        "2. Who played Lorenzo Bartolini in [1]?": 'Relate([1], "Lorenzo Bartolini actor")',
        "3. Which films did Gary Winick direct?": 'Relate("Gary Winick", "films directed")',
        "4. Which of [3] was published on 2010/4/25?": 'Filter([3], "published on 2010/4/25")',
    }),
    _bridge("text-kg_163-19",
            "Which team did the American basketball player born on 1978/4/5 win a ring with?",
            ("Which American basketball player was born on 1978/4/5?", 'Search("American basketball player", "born 1978/4/5")'),
            ("Which team did [1] win a ring with?", 'Relate([1], "championship team")')),
    _bridge("text-kg_163-27",
            "What is the height in meters of the lattice tower located on Champ de Mars?",
            ("Which lattice tower is on the Champ de Mars?", 'Search("lattice tower on the Champ de Mars")'),
            ("How tall is [1] in meters?", 'Relate([1], "height in meters")')),
    # Web-Text: a description found on the web gives the bridging entity, Wikipedia answers
    _bridge("web-text_150-2",
            "Considering the wealthiest emirate led by Sheikh Mohammed bin Rashid Al Maktoum, what is the name of the sea surrounding it?",
            ("Which is the wealthiest emirate led by Sheikh Mohammed?", 'Search("wealthiest emirate led by Sheikh Mohammed bin Rashid")'),
            ("Which sea surrounds [1]?", 'Relate([1], "sea")')),
    _bridge("web-text_150-9",
            "In the series House of Cards, who plays the mom of the 47th President of the United States?",
            ("Who is the 47th President in House of Cards?", 'Search("47th President of the United States", "House of Cards")'),
            ("Who plays [1]'s mother?", 'Relate([1], "mother played by")')),
    (_q("web-text_150-22", "Is the iconic 1889 Parisian landmark by Gustave Eiffel made of steel or iron?"), {
        "Is the iconic 1889 Parisian landmark by Gustave Eiffel made of steel or iron?": [
            "1. What is the 1889 Parisian landmark by Gustave Eiffel?", "2. What is [1] made of?",
            "3. Given [2], is it steel or iron?"],
        "1. What is the 1889 Parisian landmark by Gustave Eiffel?": 'Search("1889 Parisian landmark by Gustave Eiffel")',
        "2. What is [1] made of?": 'Relate([1], "material")',
        "3. Given [2], is it steel or iron?": "[DR]",
    }),
    _bridge("web-text_150-62",
            "When was Smithsonian's flagship natural history museum built?",
            ("What is Smithsonian's flagship natural history museum?", 'Search("Smithsonian flagship natural history museum")'),
            ("When was [1] built?", 'Relate([1], "year built")')),
    _bridge("web-text_150-83",
            'Which American country music duo is featured in the singer who sings the country song "If It\'s Meant to Be"?',
            ('Who sings "Meant to Be"?', 'Relate("Meant to Be (song)", "performer")'),
            ("Which country duo is featured on [1]'s song?", 'Relate([1], "featured country duo")')),
    _bridge("web-text_150-84",
            "Who is the director set to direct biopics of all four members of the band that holds the record for the most number one hits?",
            ("Which band has the most number one hits?", 'Search("band with the most number one hits")'),
            ("Who will direct biopics of [1]'s four members?", 'Relate([1], "biopics director")')),
]


# --- operators and reasoning, on sub-questions of the same 21 questions ----------------------------
EXAMPLES: dict[str, list[str | Demo]] = {
    "search": [
        retrieved(_src("text-kg_163-8"), knowledge(
            wikidata=[("Sugar Ray Leonard", "date of birth: 1956-05-17"), ("Sugar Ray Leonard", "occupation: boxer, actor"),
                      ("Sugar Ray Leonard", "country of citizenship: United States of America")]),
            "Who is the American actor born on 1956/5/17?",
            "The knowledge graph gives an American boxer and actor born on 17 May 1956.",
            "The American actor born on 1956/5/17 is Sugar Ray Leonard", ["Sugar Ray Leonard"]),
        retrieved(_src("web-text_150-2"), knowledge(
            google=[("Dubai - the richest emirate", "Dubai, ruled by Sheikh Mohammed bin Rashid Al Maktoum, is often called the wealthiest of the seven emirates."),
                    ("Abu Dhabi", "Abu Dhabi is the capital and largest emirate of the UAE.")]),
            "What is the wealthiest emirate led by Sheikh Mohammed bin Rashid Al Maktoum?",
            "Result [1] names Dubai, which Sheikh Mohammed rules; Abu Dhabi has another ruler.",
            "The wealthiest emirate led by Sheikh Mohammed bin Rashid Al Maktoum is Dubai", ["Dubai"]),
        retrieved(_src("text-kg_163-9"), knowledge(
            wikidata=[("Northern Exposure", "creator: Joshua Brand"), ("Northern Exposure", "start time: 1990-07-12"),
                      ("St. Elsewhere", "creator: Joshua Brand")]),
            "Which television series was created by Joshua Brand and started on 1990/7/12?",
            "Joshua Brand created two series here; only Northern Exposure started on 12 July 1990.",
            "The series created by Joshua Brand that started on 1990/7/12 is Northern Exposure", ["Northern Exposure"]),
        retrieved(_src("web-text_150-22"), knowledge(
            wikipedia=[("Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, built by Gustave Eiffel's company for the 1889 World's Fair.")]),
            "What is the iconic 1889 Parisian landmark by Gustave Eiffel?",
            "The passage describes the tower Eiffel's company built for 1889.",
            "The 1889 Parisian landmark by Gustave Eiffel is the Eiffel Tower", ["Eiffel Tower"]),
        retrieved(_src("web-text_150-84"), knowledge(
            google=[("Most number-one hits", "The Beatles hold the record for the most number-one hits on the Billboard Hot 100, with 20.")]),
            "Which band holds the record for the most number one hits?",
            "The result names the Beatles.",
            "The band with the most number one hits is the Beatles", ["The Beatles"]),
    ],
    "relate": [
        retrieved(_src("kg-web_132-5"), knowledge(
            wikidata=[("Jeb Bush", "spouse: Columba Bush")]),
            "Who is the spouse of Jeb Bush?", "The knowledge graph gives his spouse.",
            "Jeb Bush's spouse is Columba Bush", ["Columba Bush"]),
        retrieved(_src("kg-web_132-5"), knowledge(
            google=[("Columba Bush writes on domestic violence", "In May 2015 Columba Bush wrote an op-ed in the Des Moines Register about the fight against domestic violence.")]),
            "In which newspaper did Columba Bush publish an op-ed on domestic violence in May 2015?",
            "The result names the Des Moines Register.",
            "Columba Bush's May 2015 op-ed appeared in the Des Moines Register", ["Des Moines Register"]),
        retrieved(_src("kg-web_132-23"), knowledge(
            wikidata=[("Toshio Suzuki (producer)", "place of birth: Nagoya")]),
            "In which city was Toshio Suzuki born?", "The knowledge graph gives Nagoya.",
            "Toshio Suzuki was born in Nagoya", ["Nagoya"]),
        retrieved(_src("kg-web_132-23"), knowledge(
            google=[("Ransomware attack halts Japan's busiest port", "A ransomware attack on the Port of Nagoya began on Tuesday, July 4, 2023, stopping its container terminals for two days.")]),
            "When did the ransomware attack on the port of Nagoya begin?",
            "The news result dates the start of the attack.",
            "The ransomware attack on the Port of Nagoya began on July 4, 2023", ["July 4, 2023"]),
        retrieved(_src("text-kg_163-9"), knowledge(
            wikipedia=[("Northern Exposure", "Northern Exposure is an American comedy-drama that ran on CBS from 1990 to 1995, for six seasons and 110 episodes.")]),
            "How many seasons are there of Northern Exposure?", "The passage says six seasons.",
            "Northern Exposure has 6 seasons", ["6"]),
        retrieved(_src("text-kg_163-18"), knowledge(
            wikipedia=[("Letters to Juliet", "Letters to Juliet is a 2010 romantic film directed by Gary Winick, starring Amanda Seyfried, Vanessa Redgrave as Claire and Franco Nero as Lorenzo Bartolini.")]),
            "Who played Lorenzo Bartolini in Letters to Juliet?", "The cast list gives Franco Nero.",
            "Lorenzo Bartolini in Letters to Juliet was played by Franco Nero", ["Franco Nero"]),
        retrieved(_src("kg-web_132-30"), knowledge(
            google=[("Saddam Hussein executed", "Saddam Hussein was executed by hanging in Baghdad on December 30, 2006.")]),
            "When was Saddam Hussein hanged?", "The result gives the date of the execution.",
            "Saddam Hussein was hanged on December 30, 2006", ["December 30, 2006"]),
        retrieved(_src("kg-web_132-60"), knowledge(
            google=[("Harris weighs border visit", "Vice President Kamala Harris is considering a visit to the US-Mexico border in Arizona later in September 2024, people familiar with the plans said.")]),
            "Is Kamala Harris considering a visit to the US-Mexico border in Arizona in September 2024?",
            "The news report says she is considering the visit.",
            "Yes, Kamala Harris is considering a visit to the border in Arizona in September 2024", ["Yes"]),
    ],
    "filter": [
        retrieved(_src("text-kg_163-18"), knowledge(
            wikidata=[("Letters to Juliet", "publication date: 2010-04-25"), ("Bride Wars", "publication date: 2009-01-09"),
                      ("13 Going on 30", "publication date: 2004-04-23")]),
            "Which of 13 Going on 30, Charlotte's Web, Bride Wars, Letters to Juliet was published on 2010/4/25?",
            "Only Letters to Juliet has the publication date 2010-04-25; Charlotte's Web came out in 2006.",
            "The film published on 2010/4/25 is Letters to Juliet", ["Letters to Juliet"],
            condition="published on 2010/4/25"),
        retrieved(_src("text-kg_163-8"), knowledge(
            wikidata=[("Sugar Ray Leonard", "date of birth: 1956-05-17"), ("Mr. T", "date of birth: 1952-05-21"),
                      ("Floyd Mayweather Jr.", "date of birth: 1977-02-24")]),
            "Which of Mr. T, Sugar Ray Leonard, Floyd Mayweather Jr. was born on 1956/5/17?",
            "The knowledge graph gives 1956-05-17 only for Sugar Ray Leonard.",
            "The one born on 1956/5/17 is Sugar Ray Leonard", ["Sugar Ray Leonard"],
            condition="born on 1956/5/17"),
    ],
    "child_reasoning": [
        from_pairs(_src("kg-web_132-5"), CHILD, [
            'Q: 1. Who is the spouse of Jeb Bush? A: ["Columba Bush"]',
            'Q: 2. In which newspaper did [1] publish an op-ed on domestic violence in May 2015? A: Columba Bush wrote it in the Des Moines Register. ["Des Moines Register"]'],
            "In which newspaper did the spouse of Jeb Bush publish an op-ed on domestic violence in May 2015?",
            "Jeb Bush's spouse is Columba Bush, whose op-ed ran in the Des Moines Register.",
            "The spouse of Jeb Bush published her op-ed in the Des Moines Register", ["Des Moines Register"]),
        from_pairs(_src("kg-web_132-23"), CHILD, [
            'Q: 3. Who is Toshio Suzuki? A: ["Toshio Suzuki (producer)"]',
            'Q: 4. In which city was [3] born? A: Toshio Suzuki was born in Nagoya. ["Nagoya"]'],
            "Where was Toshio Suzuki born?",
            "Toshio Suzuki, the film producer, was born in Nagoya.",
            "Toshio Suzuki's birth city is Nagoya", ["Nagoya"]),
        from_pairs(_src("text-kg_163-12"), CHILD, [
            'Q: 1. Which battle involved Frank Peak Akers? A: ["Battle of Midway"]',
            'Q: 2. How many American casualties occurred in [1]? A: []'],
            "How many American casualties occurred in the battle involving Frank Peak Akers?",
            "Frank Akers fought at Midway; the second answer is empty, but about 307 Americans were killed in the Battle of Midway.",
            "About 307 Americans were killed in the Battle of Midway", ["307"]),
        from_pairs(_src("web-text_150-83"), CHILD, [
            'Q: 1. Who sings the country song "Meant to Be"? A: ["Bebe Rexha"]',
            'Q: 2. Which American country music duo is featured in [1]\'s song? A: Meant to Be features Florida Georgia Line. ["Florida Georgia Line"]'],
            'Which American country music duo is featured in the singer who sings the country song "If It\'s Meant to Be"?',
            "Meant to Be is sung by Bebe Rexha and features the duo Florida Georgia Line.",
            "The duo featured on Bebe Rexha's Meant to Be is Florida Georgia Line", ["Florida Georgia Line"]),
    ],
    "sibling_reasoning": [
        from_pairs(_src("web-text_150-22"), SIBLING, [
            'Q: 2. What material is [1] made of? A: The Eiffel Tower is made of wrought iron. ["wrought iron"]'],
            "Given [2], is it made of steel or iron?",
            "Question 2 says wrought iron, which is iron and not steel.",
            "The Eiffel Tower is made of wrought iron, not steel", ["wrought iron"]),
        from_pairs(_src("text-kg_163-9"), SIBLING, [
            'Q: 2. Which seasons of [1] were aired? A: ["Season 1", "Season 2", "Season 3", "Season 4", "Season 5", "Season 6"]'],
            "How many seasons are in [2]?",
            "Question 2 lists six seasons.", "Northern Exposure has 6 seasons", ["6"]),
    ],
    "direct_rag": [
        retrieved(_src("web-text_150-2"), knowledge(
            wikipedia=[("Dubai", "Dubai is the most populous city of the United Arab Emirates, on the southeast coast of the Persian Gulf.")],
            google=[("Dubai geography", "Dubai lies on the coast of the Persian Gulf, also called the Arabian Gulf.")]),
            "Considering the wealthiest emirate led by Sheikh Mohammed bin Rashid Al Maktoum, what is the name of the sea surrounding it?",
            "The emirate is Dubai, and both sources place it on the Persian Gulf.",
            "The sea surrounding Dubai is the Persian Gulf", ["Persian Gulf"]),
        retrieved(_src("web-text_150-9"), knowledge(
            google=[("Elizabeth Hale | House of Cards Wiki", "Elizabeth Hale, the mother of Claire Underwood, is played by Ellen Burstyn.")]),
            "In the series House of Cards, who plays the mom of the 47th President of the United States?",
            "The 47th President in the series is Claire Underwood; her mother is played by Ellen Burstyn.",
            "Ellen Burstyn plays the mother of Claire Underwood in House of Cards", ["Ellen Burstyn"]),
        retrieved(_src("text-kg_163-6"), knowledge(
            wikipedia=[("Confederate States of America", "The Confederate States of America was formed in February 1861 by seven Southern states that had seceded from the United States.")]),
            "When was the constitutional republic with nickname Confederacy formed?",
            "The republic nicknamed the Confederacy is the Confederate States of America, formed in February 1861.",
            "The Confederate States of America was formed in February 1861", ["February 1861"]),
        retrieved(_src("kg-web_132-113"), knowledge(
            wikidata=[("Safe & Sound (Taylor Swift song)", "performer: Taylor Swift"),
                      ("Safe & Sound (Taylor Swift song)", "performer: The Civil Wars")],
            google=[("Taylor Swift endorses Kamala Harris", "After the September 10, 2024 debate, Taylor Swift said she would vote for Kamala Harris for president.")]),
            "Whom did the performer of the song 'safe & sound' endorse for president in 2024?",
            "Safe & Sound is Taylor Swift's song with The Civil Wars, and the result says Swift endorsed Kamala Harris.",
            "The performer of Safe & Sound, Taylor Swift, endorsed Kamala Harris in 2024", ["Kamala Harris"]),
        retrieved(_src("web-text_150-84"), knowledge(
            google=[("Sam Mendes to direct four Beatles films", "Sam Mendes will direct four films, each about one of the Beatles, to be released in 2027.")]),
            "Who is the director set to direct biopics of all four members of the band that holds the record for the most number one hits?",
            "The band is the Beatles, and the result names Sam Mendes as director of the four films.",
            "Sam Mendes is set to direct biopics of all four Beatles", ["Sam Mendes"]),
        retrieved(_src("text-kg_163-19"), knowledge(
            wikidata=[("Stephen Jackson", "date of birth: 1978-04-05")],
            wikipedia=[("Stephen Jackson", "Stephen Jackson is an American former basketball player who won the 2003 NBA championship with the San Antonio Spurs.")]),
            "Which team did the American basketball player born on 1978/4/5 win a ring with?",
            "The player born on 5 April 1978 is Stephen Jackson, who won his title with the San Antonio Spurs.",
            "Stephen Jackson won a ring with the San Antonio Spurs", ["San Antonio Spurs"]),
        retrieved(_src("web-text_150-62"), knowledge(
            google=[("National Museum of Natural History", "The Smithsonian's National Museum of Natural History opened on the National Mall in 1910.")]),
            "When was Smithsonian's flagship natural history museum built?",
            "The flagship museum is the National Museum of Natural History, which opened in 1910.",
            "The National Museum of Natural History was built in 1910", ["1910"]),
    ],
    "closed_book": [
        closed(_src("text-kg_163-27"), "What is the height in meters of the lattice tower located on Champ de Mars?",
               "The lattice tower on the Champ de Mars is the Eiffel Tower, about 324 meters tall with its antennas of the time.",
               "The Eiffel Tower is about 324 meters tall", ["324"]),
        closed(_src("web-text_150-83"), 'Which American country music duo is featured in the singer who sings the country song "If It\'s Meant to Be"?',
               "Meant to Be is a song by Bebe Rexha featuring the duo Florida Georgia Line.",
               "The duo is Florida Georgia Line", ["Florida Georgia Line"]),
        closed(_src("kg-web_132-30"), "When was the the Iraq politician born on 1937/4/28 hanged to death?",
               "The Iraqi politician born on 28 April 1937 is Saddam Hussein, who was hanged on December 30, 2006.",
               "Saddam Hussein was hanged on December 30, 2006", ["December 30, 2006"]),
    ],
}


RULES = (
    "Dataset rules (BlendQA): first settle the bridging entity the question describes (through a knowledge-graph "
    "relation, a date of birth, a description), then answer the outer question about it. The answer may be a "
    "name, a date as written, a figure (41.1%, 6) or a short phrase from a news report; write numbers as "
    'digits. Answer a yes/no question with ["Yes"] or ["No"].'
)
