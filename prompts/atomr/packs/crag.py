"""The CRAG pack (ATOMR Table 3): planner demonstrations, per-stage demonstrations and answer rules.

CRAG's static questions (finance, sports, music, movie, open domain; simple, simple with a
condition, multi-hop, comparison) are answered over Google results, Wikipedia and Wikidata.
As in the authors' CRAG prompt, many questions are one atomic call (a Search for a described
entity, a Relate for an attribute at a time); the rest are chains, comparisons and Filters over
a list. Every demonstration is written in our words on a question of ``CRAG_dev_100.jsonl``
(its ``question_id`` recorded); ``crag-test-500``, the split Table 3 evaluates, holds none.
Counts follow the authors' CRAG prompts: 22 planner demonstrations; Search 4, Relate 7,
Filter 2, child reasoning 5, direct RAG 8, closed book 4 (their [END] questions go through the
child prompt; our sibling stage has 3). Direct RAG may answer Unknown, as theirs does.
"""

from __future__ import annotations

from atomgraph.prompts.atomr.packs.common import Demo
from atomgraph.prompts.atomr.packs.demos import CHILD, CRAG_DEV, SIBLING, closed, from_pairs, knowledge, retrieved

# CRAG_dev_100.jsonl questions (question_id, question), by their line index in that file.
_DEV = {
    0: ("08e48056-1191-42d4-a5d0-0d39acce629a", "what was the total amount of assets under management (aum) by hedge funds in the united states as of november 2017?"),
    7: ("9059b522-02f5-4722-994a-02945b7b63d9", "who performed in the super bowl halftime show in 2012?"),
    10: ("bce2be38-4673-4466-a83d-61e16ffaaa40", "what album did evanescence release in 2006, which included the songs \"call me when you're sober\" and \"lose control\"?"),
    13: ("8aa6018c-c402-4ab5-b633-76bc029dfd38", "what was the first project that alexandre aja worked on as a director?"),
    14: ("e9a15655-bcfa-4c78-a42f-54978f7341eb", "what is the current average volume of amazon as of march 8th, 2024?"),
    17: ("a00bb355-d094-41df-a1de-2514e36c5f6e", "how many appearances did gloria estefan make in the superbowl by 2024?"),
    18: ("b2e9aa45-a845-4b65-b078-ffbeab26e845", "how many times has angelina jolie played maleficent in a movie?"),
    20: ("6592cf9e-13cb-4be4-9548-1f3be30764ec", "what album did outkast release in 2000, which included the songs \"ms. jackson\" and \"so fresh, so clean\"?"),
    22: ("b0bd7eef-2016-4360-836d-c229b1e8cdc5", "what is the name of taylor swift's debut album released in the 2000s?"),
    25: ("caa46ec9-6145-4726-9b87-be393481d258", "when did after 7 start performing?"),
    29: ("8ac47174-33a8-421d-97d1-1c0d5b3fa143", "tell me the name of the movie that won the oscar for the best documentary feature film in 2000?"),
    30: ("5576b912-c1cf-40ec-bac6-a817d14e95c7", "for the film life or something like it, who directed it?"),
    31: ("81510e05-43f4-4036-aecb-7d4f737a7d54", "what was the overall worldwide box office revenue for invictus?"),
    33: ("c05e5e0d-b5a6-400b-a008-cc129601093b", "what are the main sections on a balance sheet?"),
    35: ("c798b289-f253-444b-b393-75a9f1c0c306", "in 1991, which actor took home the oscar for best actor?"),
    47: ("31616f49-8b8e-432c-84a5-3fb8075cd6e1", "who directed the movie \"the social network\"?"),
    49: ("68ca2297-6175-44cb-a26e-8355461a7442", "who are zoe kravitz's parents?"),
    51: ("207250e7-d0a6-4b17-9072-5496c7ff6380", "what was taylor swifts age when she released her debut album?"),
    58: ("ad57a30d-0f77-41cf-ab69-350e7080a727", "who was head coach of the lakers in kobe bryant's rookie year?"),
    61: ("66337316-94d9-49c2-b09e-8ea5f29a9925", "what country does the company behind spider-man 2 (2023 video game) call home?"),
    62: ("e1685144-072d-498c-a0bf-d2ca9ad939fa", "what is the first song on drake's second album?"),
    66: ("0c373f48-2891-41c0-96f2-c91bf2757c89", "when did robert john \"mutt\" lange's third wife release her album come on over?"),
    80: ("56748ddf-0440-4aa8-bae4-9ce38114f4f1", "which film is longer, knocked up or superbad?"),
    85: ("278fe73e-7fb1-4cac-a42b-969a5957dbd8", "which stock had higher pretax income in the 4th quarter of 2023? apple or microsoft"),
    90: ("65a07837-fb49-45d0-8231-f2a58e1cce2a", "in 2022, did brooklyn nets win more games than boston celtics?"),
    91: ("b194b88e-4be4-4032-9f09-e93bd7eb2338", "who has won more mlb world series titles, the athletics or mariners?"),
    96: ("82faa2ce-c216-4af3-bd3d-e4ce949712fe", "does broccoli or cauliflower have more vitamin c?"),
    97: ("4d59e9dc-3b8c-487b-aa45-f61f5505ee9e", "which movie was created first, a walk to remember or the notebook?"),
}


def _src(index: int) -> tuple[str, str, str]:
    """(file, id, question) of the dev question at line ``index``."""
    return (CRAG_DEV, *_DEV[index])


# planner question -> (file, id): where each planner demonstration's question comes from
PLAN_SOURCES: dict[str, tuple[str, str]] = {}


def _q(index: int, question: str) -> str:
    assert question == _DEV[index][1], question  # the dataset's question, verbatim
    PLAN_SOURCES[question] = (CRAG_DEV, _DEV[index][0])
    return question


def _leaf(index: int, question: str, call: str) -> tuple[str, dict[str, object]]:
    return _q(index, question), {question: call}


def _compare(index: int, question: str, first: tuple[str, str], second: tuple[str, str], final: str):
    """A comparison: two Relate leaves and a [DR] question over them."""
    (q1, c1), (q2, c2) = first, second
    q3 = f"3. Given [1] and [2], {final}"
    return _q(index, question), {question: [f"1. {q1}", f"2. {q2}", q3], f"1. {q1}": c1, f"2. {q2}": c2, q3: "[DR]"}


# --- planner: 22 questions of CRAG_dev_100 (simple, with a condition, multi-hop, comparison) -------
CRAG_PLAN = [
    _leaf(0, "what was the total amount of assets under management (aum) by hedge funds in the united states as of november 2017?",
          'Relate("hedge funds in the United States", "assets under management as of November 2017")'),
    _leaf(7, "who performed in the super bowl halftime show in 2012?",
          'Relate("Super Bowl XLVI halftime show", "performers")'),
    _leaf(13, "what was the first project that alexandre aja worked on as a director?",
          'Relate("Alexandre Aja", "first work as a director")'),
    _leaf(14, "what is the current average volume of amazon as of march 8th, 2024?",
          'Relate("Amazon stock", "average trading volume as of March 8, 2024")'),
    _leaf(22, "what is the name of taylor swift's debut album released in the 2000s?",
          'Relate("Taylor Swift", "debut studio album")'),
    _leaf(29, "tell me the name of the movie that won the oscar for the best documentary feature film in 2000?",
          'Search("winner of the Academy Award for Best Documentary Feature", "2000 ceremony")'),
    _leaf(35, "in 1991, which actor took home the oscar for best actor?",
          'Search("winner of the Academy Award for Best Actor", "1991 ceremony")'),
    _leaf(49, "who are zoe kravitz's parents?", 'Relate("Zoë Kravitz", "parents")'),
    _leaf(33, "what are the main sections on a balance sheet?", 'Relate("balance sheet", "main sections")'),
    (_q(25, "when did after 7 start performing?"), {
        "when did after 7 start performing?": ["1. Who is After 7?", "2. When did [1] start performing?"],
        "1. Who is After 7?": 'Search("After 7", "R&B vocal group")',
        "2. When did [1] start performing?": 'Relate([1], "year it began performing")',
    }),
    (_q(10, 'what album did evanescence release in 2006, which included the songs "call me when you\'re sober" and "lose control"?'), {
        'what album did evanescence release in 2006, which included the songs "call me when you\'re sober" and "lose control"?': [
            "1. What albums has Evanescence released?",
            '2. Which of [1] was released in 2006 and includes "Call Me When You\'re Sober" and "Lose Control"?'],
        "1. What albums has Evanescence released?": 'Relate("Evanescence", "albums")',
        '2. Which of [1] was released in 2006 and includes "Call Me When You\'re Sober" and "Lose Control"?':
            'Filter([1], "released in 2006 and includes the songs Call Me When You\'re Sober and Lose Control")',
    }),
    (_q(17, "how many appearances did gloria estefan make in the superbowl by 2024?"), {
        "how many appearances did gloria estefan make in the superbowl by 2024?": [
            "1. At which Super Bowls did Gloria Estefan perform by 2024?", "2. How many Super Bowls are in [1]?"],
        "1. At which Super Bowls did Gloria Estefan perform by 2024?": 'Relate("Gloria Estefan", "Super Bowl performances up to 2024")',
        "2. How many Super Bowls are in [1]?": "[DR]",
    }),
    (_q(51, "what was taylor swifts age when she released her debut album?"), {
        "what was taylor swifts age when she released her debut album?": [
            "1. When did Taylor Swift release her debut album?", "2. When was Taylor Swift born?",
            "3. Given [1] and [2], how old was Taylor Swift when her debut album came out?"],
        "1. When did Taylor Swift release her debut album?": 'Relate("Taylor Swift", "release date of her debut album")',
        "2. When was Taylor Swift born?": 'Relate("Taylor Swift", "date of birth")',
        "3. Given [1] and [2], how old was Taylor Swift when her debut album came out?": "[DR]",
    }),
    (_q(58, "who was head coach of the lakers in kobe bryant's rookie year?"), {
        "who was head coach of the lakers in kobe bryant's rookie year?": [
            "1. Which season was Kobe Bryant's rookie year?", "2. Who was the head coach of the Los Angeles Lakers in [1]?"],
        "1. Which season was Kobe Bryant's rookie year?": 'Relate("Kobe Bryant", "rookie season")',
        "2. Who was the head coach of the Los Angeles Lakers in [1]?": 'Relate([1], "head coach of the Los Angeles Lakers")',
    }),
    (_q(61, "what country does the company behind spider-man 2 (2023 video game) call home?"), {
        "what country does the company behind spider-man 2 (2023 video game) call home?": [
            "1. Which company made Spider-Man 2, the 2023 video game?", "2. In which country is [1] based?"],
        "1. Which company made Spider-Man 2, the 2023 video game?": [
            "3. What is Spider-Man 2, the 2023 video game?", "4. Which company developed [3]?"],
        "2. In which country is [1] based?": 'Relate([1], "country of headquarters")',
        "3. What is Spider-Man 2, the 2023 video game?": 'Search("Spider-Man 2", "2023 video game")',
        "4. Which company developed [3]?": 'Relate([3], "developer")',
    }),
    (_q(66, 'when did robert john "mutt" lange\'s third wife release her album come on over?'), {
        'when did robert john "mutt" lange\'s third wife release her album come on over?': [
            '1. Who is Robert John "Mutt" Lange\'s third wife?', "2. When did [1] release her album Come On Over?"],
        '1. Who is Robert John "Mutt" Lange\'s third wife?': 'Relate("Robert John Lange (Mutt Lange)", "third wife")',
        "2. When did [1] release her album Come On Over?": 'Relate([1], "release date of the album Come On Over")',
    }),
    (_q(62, "what is the first song on drake's second album?"), {
        "what is the first song on drake's second album?": [
            "1. What is Drake's second studio album?", "2. What is the first song on [1]?"],
        "1. What is Drake's second studio album?": 'Relate("Drake", "second studio album")',
        "2. What is the first song on [1]?": 'Relate([1], "first track")',
    }),
    _compare(80, "which film is longer, knocked up or superbad?",
             ("How long is the film Knocked Up?", 'Relate("Knocked Up", "running time")'),
             ("How long is the film Superbad?", 'Relate("Superbad", "running time")'),
             "which film is longer, Knocked Up or Superbad?"),
    _compare(91, "who has won more mlb world series titles, the athletics or mariners?",
             ("How many World Series titles have the Athletics won?", 'Relate("Oakland Athletics", "number of World Series titles")'),
             ("How many World Series titles have the Mariners won?", 'Relate("Seattle Mariners", "number of World Series titles")'),
             "which team has won more World Series titles, the Athletics or the Mariners?"),
    _compare(97, "which movie was created first, a walk to remember or the notebook?",
             ("When was A Walk to Remember released?", 'Relate("A Walk to Remember", "release date")'),
             ("When was The Notebook released?", 'Relate("The Notebook", "release date")'),
             "which movie came out first, A Walk to Remember or The Notebook?"),
    _compare(96, "does broccoli or cauliflower have more vitamin c?",
             ("How much vitamin C does broccoli have?", 'Relate("broccoli", "vitamin C content per 100 g")'),
             ("How much vitamin C does cauliflower have?", 'Relate("cauliflower", "vitamin C content per 100 g")'),
             "which has more vitamin C, broccoli or cauliflower?"),
    _compare(85, "which stock had higher pretax income in the 4th quarter of 2023? apple or microsoft",
             ("What was Apple's pretax income in the fourth quarter of 2023?", 'Relate("Apple Inc.", "pretax income in the fourth quarter of 2023")'),
             ("What was Microsoft's pretax income in the fourth quarter of 2023?", 'Relate("Microsoft", "pretax income in the fourth quarter of 2023")'),
             "which company had the higher pretax income in that quarter, Apple or Microsoft?"),
]


# --- operators and reasoning, on sub-questions of the dev questions above ----------------------------
EXAMPLES: dict[str, list[str | Demo]] = {
    "search": [
        retrieved(_src(35), knowledge(
            wikipedia=[("63rd Academy Awards", "The 63rd Academy Awards, held on March 25, 1991, honoured the films of 1990; Jeremy Irons won Best Actor for Reversal of Fortune.")],
            google=[("Best Actor 1991 Oscars", "Jeremy Irons took the Oscar for Best Actor at the 1991 ceremony for playing Claus von Bülow.")]),
            "Who won the Academy Award for Best Actor at the 1991 ceremony?",
            "Both sources name Jeremy Irons as the Best Actor of the 1991 ceremony.",
            "The Best Actor Oscar of 1991 went to Jeremy Irons", ["Jeremy Irons"]),
        retrieved(_src(47), knowledge(
            wikipedia=[("The Social Network", "The Social Network is a 2010 American biographical drama film about the founding of Facebook, directed by David Fincher."),
                       ("Social network", "A social network is a social structure made up of individuals and the ties between them.")]),
            "What is the movie The Social Network?",
            "Passage [1] is the film; passage [2] is the general idea, not a movie.",
            "The Social Network is the 2010 film about the founding of Facebook", ["The Social Network (2010 film)"]),
        retrieved(_src(61), knowledge(
            google=[("Marvel's Spider-Man 2", "Marvel's Spider-Man 2 is a 2023 action-adventure game for the PlayStation 5, the sequel to Marvel's Spider-Man (2018)."),
                    ("Spider-Man 2 (2004 film)", "Spider-Man 2 is a 2004 superhero film directed by Sam Raimi.")]),
            "What is Spider-Man 2, the 2023 video game?",
            "Result [1] is the 2023 game; result [2] is a 2004 film.",
            "Spider-Man 2, the 2023 video game, is Marvel's Spider-Man 2", ["Marvel's Spider-Man 2"]),
        retrieved(_src(25), knowledge(
            wikipedia=[("After 7", "After 7 is an American R&B vocal group from Indianapolis, known for the 1989 hit Ready or Not."),
                       ("After Seven", "After Seven is a 1929 American film.")]),
            "Who is After 7? (R&B vocal group)",
            "Passage [1] is the R&B group; passage [2] is a film.",
            "After 7 is the R&B vocal group from Indianapolis", ["After 7"]),
    ],
    "relate": [
        retrieved(_src(0), knowledge(
            google=[("Hedge fund industry assets", "Assets under management by hedge funds in the United States reached $2.63 trillion as of November 2017.")]),
            "What were the assets under management of hedge funds in the United States as of November 2017?",
            "The result gives the figure for November 2017.",
            "Hedge funds in the United States managed $2.63 trillion as of November 2017", ["$2.63 trillion"]),
        retrieved(_src(49), knowledge(
            wikidata=[("Zoë Kravitz", "father: Lenny Kravitz"), ("Zoë Kravitz", "mother: Lisa Bonet")],
            wikipedia=[("Zoë Kravitz", "Zoë Isabella Kravitz (born December 1, 1988) is an American actress, the daughter of Lenny Kravitz and Lisa Bonet.")]),
            "Who are the parents of Zoë Kravitz?",
            "The knowledge graph and the passage agree on both parents.",
            "Zoë Kravitz's parents are Lenny Kravitz and Lisa Bonet", ["Lenny Kravitz", "Lisa Bonet"]),
        retrieved(_src(10), knowledge(
            wikipedia=[("Evanescence discography", "Evanescence have released five studio albums: Fallen (2003), The Open Door (2006), Evanescence (2011), Synthesis (2017) and The Bitter Truth (2021).")]),
            "What albums has Evanescence released?",
            "The discography lists five studio albums; every one goes into the list.",
            "Evanescence released Fallen, The Open Door, Evanescence, Synthesis and The Bitter Truth",
            ["Fallen", "The Open Door", "Evanescence", "Synthesis", "The Bitter Truth"]),
        retrieved(_src(80), knowledge(
            wikipedia=[("Knocked Up", "Knocked Up is a 2007 American romantic comedy film written and directed by Judd Apatow. Running time: 129 minutes.")]),
            "How long is the film Knocked Up?",
            "The passage gives the running time.",
            "Knocked Up runs 129 minutes", ["129 minutes"]),
        retrieved(_src(91), knowledge(
            google=[("Seattle Mariners", "The Seattle Mariners are the only current MLB team that has never played in a World Series.")]),
            "How many World Series titles have the Mariners won?",
            "The Mariners have never reached a World Series, so they have won none.",
            "The Seattle Mariners have won 0 World Series titles", ["0"]),
        retrieved(_src(14), knowledge(
            google=[("Amazon.com, Inc. (AMZN) stock", "Amazon.com, Inc. (AMZN) as of March 8, 2024: average volume 47,004,501; previous close 178.75.")]),
            "What is the average trading volume of Amazon stock as of March 8, 2024?",
            "The stock summary of March 8, 2024 lists the average volume.",
            "Amazon's average volume as of March 8, 2024 is 47,004,501", ["47,004,501"]),
        retrieved(_src(58), knowledge(
            wikipedia=[("1996–97 Los Angeles Lakers season", "The 1996–97 season was the Lakers' 49th in the NBA; Del Harris was the head coach and rookie Kobe Bryant joined the team.")]),
            "Who was the head coach of the Los Angeles Lakers in the 1996–97 NBA season?",
            "The season page names Del Harris as head coach.",
            "The Lakers' head coach in 1996–97 was Del Harris", ["Del Harris"]),
    ],
    "filter": [
        retrieved(_src(10), knowledge(
            wikipedia=[("The Open Door (Evanescence album)", "The Open Door is the second studio album by Evanescence, released in October 2006; its singles include Call Me When You're Sober and Lithium, and it contains Lose Control."),
                       ("Fallen (Evanescence album)", "Fallen is the debut studio album by Evanescence, released in 2003.")]),
            "Which of Fallen, The Open Door, Evanescence, Synthesis, The Bitter Truth was released in 2006 and includes the songs Call Me When You're Sober and Lose Control?",
            "Only passage [1], The Open Door, is a 2006 album with both songs; the other albums came out in other years.",
            "The album released in 2006 with Call Me When You're Sober and Lose Control is The Open Door", ["The Open Door"],
            condition="released in 2006 and includes the songs Call Me When You're Sober and Lose Control"),
        retrieved(_src(20), knowledge(
            wikipedia=[("Stankonia", "Stankonia is the fourth studio album by OutKast, released on October 31, 2000; its singles were B.O.B, Ms. Jackson and So Fresh, So Clean."),
                       ("Aquemini", "Aquemini is the third studio album by OutKast, released in 1998.")]),
            "Which of Aquemini, Stankonia, Speakerboxxx/The Love Below includes the songs Ms. Jackson and So Fresh, So Clean?",
            "Passage [1] says both songs are singles from Stankonia; Aquemini (1998) and Speakerboxxx/The Love Below (2003) do not contain them.",
            "The album with Ms. Jackson and So Fresh, So Clean is Stankonia", ["Stankonia"],
            condition="includes the songs Ms. Jackson and So Fresh, So Clean"),
    ],
    "child_reasoning": [
        from_pairs(_src(51), CHILD, [
            'Q: 1. When did Taylor Swift release her debut album? A: ["October 24, 2006"]',
            'Q: 2. When was Taylor Swift born? A: ["December 13, 1989"]',
            'Q: 3. Given [1] and [2], how old was Taylor Swift when her debut album came out? A: She was 16. ["16"]'],
            "what was taylor swifts age when she released her debut album?",
            "Born on December 13, 1989, she was 16 when the album came out on October 24, 2006.",
            "Taylor Swift was 16 when she released her debut album", ["16"]),
        from_pairs(_src(58), CHILD, [
            'Q: 1. Which season was Kobe Bryant\'s rookie year? A: ["1996–97 NBA season"]',
            'Q: 2. Who was the head coach of the Los Angeles Lakers in [1]? A: Del Harris coached the Lakers in 1996–97. ["Del Harris"]'],
            "who was head coach of the lakers in kobe bryant's rookie year?",
            "Kobe Bryant's rookie season was 1996–97, when Del Harris coached the Lakers.",
            "The Lakers' head coach in Kobe Bryant's rookie year was Del Harris", ["Del Harris"]),
        from_pairs(_src(61), CHILD, [
            'Q: 1. Which company made Spider-Man 2, the 2023 video game? A: ["Insomniac Games"]',
            'Q: 2. In which country is [1] based? A: Insomniac Games is based in Burbank, California, in the United States. ["United States"]'],
            "what country does the company behind spider-man 2 (2023 video game) call home?",
            "The game was made by Insomniac Games, which is based in the United States.",
            "The company behind Spider-Man 2, Insomniac Games, calls the United States home", ["United States"]),
        from_pairs(_src(62), CHILD, [
            'Q: 1. What is Drake\'s second studio album? A: ["Take Care"]',
            'Q: 2. What is the first song on [1]? A: Take Care opens with Over My Dead Body. ["Over My Dead Body"]'],
            "what is the first song on drake's second album?",
            "Drake's second album is Take Care, whose first song is Over My Dead Body.",
            "The first song on Drake's second album, Take Care, is Over My Dead Body", ["Over My Dead Body"]),
        from_pairs(_src(66), CHILD, [
            'Q: 1. Who is Robert John "Mutt" Lange\'s third wife? A: []',
            'Q: 2. When did [1] release her album Come On Over? A: []'],
            'when did robert john "mutt" lange\'s third wife release her album come on over?',
            "The child answers are empty, but Come On Over is the album of Shania Twain, Lange's wife when it was made, and it came out in 1997.",
            "The album Come On Over was released in 1997", ["1997"]),
    ],
    "sibling_reasoning": [
        from_pairs(_src(80), SIBLING, [
            'Q: 1. How long is the film Knocked Up? A: ["129 minutes"]',
            'Q: 2. How long is the film Superbad? A: ["113 minutes"]'],
            "Given [1] and [2], which film is longer, Knocked Up or Superbad?",
            "129 minutes is more than 113 minutes.", "Knocked Up is longer than Superbad", ["Knocked Up"]),
        from_pairs(_src(91), SIBLING, [
            'Q: 1. How many World Series titles have the Athletics won? A: ["9"]',
            'Q: 2. How many World Series titles have the Mariners won? A: ["0"]'],
            "Given [1] and [2], which team has won more World Series titles, the Athletics or the Mariners?",
            "The Athletics have 9 titles and the Mariners none.",
            "The Athletics have won more World Series titles than the Mariners", ["Athletics"]),
        from_pairs(_src(96), SIBLING, [
            'Q: 1. How much vitamin C does broccoli have? A: ["89 mg per 100 g"]',
            'Q: 2. How much vitamin C does cauliflower have? A: ["48 mg per 100 g"]'],
            "Given [1] and [2], which has more vitamin C, broccoli or cauliflower?",
            "89 mg is more than 48 mg for the same weight.", "Broccoli has more vitamin C than cauliflower", ["Broccoli"]),
    ],
    "direct_rag": [
        retrieved(_src(7), knowledge(
            google=[("Super Bowl XLVI halftime show", "Madonna headlined the Super Bowl XLVI halftime show on February 5, 2012, joined by LMFAO, Nicki Minaj, M.I.A. and CeeLo Green.")]),
            "who performed in the super bowl halftime show in 2012?",
            "The result says Madonna headlined the 2012 halftime show.",
            "Madonna performed in the 2012 Super Bowl halftime show", ["Madonna"]),
        retrieved(_src(29), knowledge(
            wikipedia=[("72nd Academy Awards", "The 72nd Academy Awards were held on March 26, 2000; One Day in September won Best Documentary Feature.")]),
            "tell me the name of the movie that won the oscar for the best documentary feature film in 2000?",
            "The 2000 ceremony gave Best Documentary Feature to One Day in September.",
            "The Oscar for Best Documentary Feature in 2000 went to One Day in September", ["One Day in September"]),
        retrieved(_src(13), knowledge(
            wikipedia=[("Alexandre Aja", "Alexandre Aja is a French film director. He began with the short film Over the Rainbow (1997), then directed Furia (1999) and High Tension (2003).")]),
            "what was the first project that alexandre aja worked on as a director?",
            "The passage names the 1997 short Over the Rainbow as his first work.",
            "Alexandre Aja's first project as a director was Over the Rainbow", ["Over the Rainbow"]),
        retrieved(_src(22), knowledge(
            wikidata=[("Taylor Swift (album)", "performer: Taylor Swift"), ("Taylor Swift (album)", "publication date: 2006-10-24")]),
            "what is the name of taylor swift's debut album released in the 2000s?",
            "Her debut album, published in 2006, carries her own name.",
            "Taylor Swift's debut album is Taylor Swift", ["Taylor Swift"]),
        retrieved(_src(97), knowledge(
            wikidata=[("A Walk to Remember", "publication date: 2002-01-25"), ("The Notebook", "publication date: 2004-06-25")]),
            "which movie was created first, a walk to remember or the notebook?",
            "A Walk to Remember came out in 2002, The Notebook in 2004.",
            "A Walk to Remember was made before The Notebook", ["A Walk to Remember"]),
        retrieved(_src(33), knowledge(
            google=[("Balance sheet basics", "A balance sheet has three main sections: assets, liabilities and shareholders' equity.")]),
            "what are the main sections on a balance sheet?",
            "The result lists the three sections.",
            "The main sections of a balance sheet are assets, liabilities and equity", ["Assets", "Liabilities", "Equity"]),
        retrieved(_src(18), knowledge(
            wikipedia=[("Maleficent (film)", "Maleficent is a 2014 fantasy film starring Angelina Jolie in the title role."),
                       ("Maleficent: Mistress of Evil", "Maleficent: Mistress of Evil is a 2019 sequel in which Angelina Jolie returns as Maleficent.")]),
            "how many times has angelina jolie played maleficent in a movie?",
            "She played the role in the 2014 film and in its 2019 sequel.",
            "Angelina Jolie has played Maleficent in 2 movies", ["2"]),
        retrieved(_src(30), "(no knowledge retrieved)",
            "for the film life or something like it, who directed it?",
            "Nothing was retrieved; from my own knowledge the 2002 film was directed by Stephen Herek.",
            "Life or Something Like It was directed by Stephen Herek", ["Stephen Herek"]),
    ],
    "closed_book": [
        closed(_src(35), "in 1991, which actor took home the oscar for best actor?",
               "At the 1991 ceremony Jeremy Irons won Best Actor for Reversal of Fortune.",
               "Jeremy Irons took home the Oscar for Best Actor in 1991", ["Jeremy Irons"]),
        closed(_src(47), 'who directed the movie "the social network"?',
               "The Social Network (2010) was directed by David Fincher.",
               "The Social Network was directed by David Fincher", ["David Fincher"]),
        closed(_src(90), "in 2022, did brooklyn nets win more games than boston celtics?",
               "In the 2021-22 season the Nets won 44 games and the Celtics 51.",
               "No, the Brooklyn Nets won fewer games than the Boston Celtics", ["No"]),
        closed(_src(31), "what was the overall worldwide box office revenue for invictus?",
               "Invictus (2009) grossed about $122.4 million worldwide.",
               "Invictus earned about $122.4 million worldwide", ["$122.4 million"]),
    ],
}


RULES = (
    "Dataset rules (CRAG): answer the question as asked at the time it names (\"as of\", \"in 2022\"): a name, "
    "a figure with its unit or currency ($2.63 trillion, 129 minutes), a date, or a short phrase for a "
    'definition. Write numbers as digits. Answer a yes/no question with ["Yes"] or ["No"]. For a list '
    "(albums, members), write every item."
)
