"""The 2WikiMultiHopQA pack: planner demonstrations (compositional, comparison, inference, bridge comparison) and answer rules."""

from __future__ import annotations


# --- 2WikiMultiHopQA style: compositional, comparison, inference, bridge comparison ---------------
TWOWIKI_PLAN = [
    ("Who is the founder of the company which published Big Picture (Magazine)?", {
        "Who is the founder of the company which published Big Picture (Magazine)?": [
            "1. Which company published Big Picture (Magazine)?", "2. Who is the founder of [1]?"],
        "1. Which company published Big Picture (Magazine)?": 'Relate("Big Picture (Magazine)", "publisher")',
        "2. Who is the founder of [1]?": 'Relate([1], "founded by")',
    }),
    ("Are Antoine Jean-Baptiste Thomas and Canardo (Rapper) of the same nationality?", {
        "Are Antoine Jean-Baptiste Thomas and Canardo (Rapper) of the same nationality?": [
            "1. What is the nationality of Antoine Jean-Baptiste Thomas?", "2. What is the nationality of Canardo (Rapper)?",
            "3. Given [1] and [2], are they of the same nationality?"],
        "1. What is the nationality of Antoine Jean-Baptiste Thomas?": 'Relate("Antoine Jean-Baptiste Thomas", "country of citizenship")',
        "2. What is the nationality of Canardo (Rapper)?": 'Relate("Canardo (Rapper)", "country of citizenship")',
        "3. Given [1] and [2], are they of the same nationality?": "[DR]",
    }),
    ("Where did Temüge's father die?", {
        "Where did Temüge's father die?": ["1. Who is the father of Temüge?", "2. Where did [1] die?"],
        "1. Who is the father of Temüge?": 'Relate("Temüge", "father")',
        "2. Where did [1] die?": 'Relate([1], "place of death")',
    }),
    ("Who is Elizabeth Stuart, Countess Of Lennox's mother-in-law?", {
        "Who is Elizabeth Stuart, Countess Of Lennox's mother-in-law?": [
            "1. Who is the spouse of Elizabeth Stuart, Countess Of Lennox?", "2. Who is the mother of [1]?"],
        "1. Who is the spouse of Elizabeth Stuart, Countess Of Lennox?": 'Relate("Elizabeth Stuart, Countess Of Lennox", "spouse")',
        "2. Who is the mother of [1]?": 'Relate([1], "mother")',
    }),
    ("Which song was released more recently, Come With Me (Pure Imagination) or Hold On Me (Grinspoon Song)?", {
        "Which song was released more recently, Come With Me (Pure Imagination) or Hold On Me (Grinspoon Song)?": [
            "1. When was Come With Me (Pure Imagination) released?", "2. When was Hold On Me (Grinspoon Song) released?",
            "3. Given [1] and [2], which song was released more recently?"],
        "1. When was Come With Me (Pure Imagination) released?": 'Relate("Come With Me (Pure Imagination)", "publication date")',
        "2. When was Hold On Me (Grinspoon Song) released?": 'Relate("Hold On Me (Grinspoon Song)", "publication date")',
        "3. Given [1] and [2], which song was released more recently?": "[DR]",
    }),
    ("Which film has the director died later, Begrijpt U Nu Waarom Ik Huil? or We Faw Down?", {
        "Which film has the director died later, Begrijpt U Nu Waarom Ik Huil? or We Faw Down?": [
            "1. Who directed Begrijpt U Nu Waarom Ik Huil?", "2. Who directed We Faw Down?",
            "3. When did [1] die?", "4. When did [2] die?",
            "5. Given [3] and [4], which film has the director who died later?"],
        "1. Who directed Begrijpt U Nu Waarom Ik Huil?": 'Relate("Begrijpt U Nu Waarom Ik Huil?", "director")',
        "2. Who directed We Faw Down?": 'Relate("We Faw Down", "director")',
        "3. When did [1] die?": 'Relate([1], "date of death")',
        "4. When did [2] die?": 'Relate([2], "date of death")',
        "5. Given [3] and [4], which film has the director who died later?": "[DR]",
    }),
    ("Who is Viacheslav I Of Kiev's maternal grandfather?", {
        "Who is Viacheslav I Of Kiev's maternal grandfather?": [
            "1. Who is the mother of Viacheslav I Of Kiev?", "2. Who is the father of [1]?"],
        "1. Who is the mother of Viacheslav I Of Kiev?": 'Relate("Viacheslav I Of Kiev", "mother")',
        "2. Who is the father of [1]?": 'Relate([1], "father")',
    }),
    ("Where did the director of film Ręce Do Góry study?", {
        "Where did the director of film Ręce Do Góry study?": [
            "1. Who is the director of film Ręce Do Góry?", "2. Where did [1] study?"],
        "1. Who is the director of film Ręce Do Góry?": 'Relate("Ręce Do Góry", "director")',
        "2. Where did [1] study?": 'Relate([1], "educated at")',
    }),
    ("Was Augusta, Lady Gregory or Luis Yáñez born first?", {
        "Was Augusta, Lady Gregory or Luis Yáñez born first?": [
            "1. When was Augusta, Lady Gregory born?", "2. When was Luis Yáñez born?",
            "3. Given [1] and [2], who was born first, Augusta, Lady Gregory or Luis Yáñez?"],
        "1. When was Augusta, Lady Gregory born?": 'Relate("Augusta, Lady Gregory", "date of birth")',
        "2. When was Luis Yáñez born?": 'Relate("Luis Yáñez", "date of birth")',
        "3. Given [1] and [2], who was born first, Augusta, Lady Gregory or Luis Yáñez?": "[DR]",
    }),
    ("Which country Dorothea Of Denmark, Duchess Of Mecklenburg's father is from?", {
        "Which country Dorothea Of Denmark, Duchess Of Mecklenburg's father is from?": [
            "1. Who is the father of Dorothea Of Denmark, Duchess Of Mecklenburg?", "2. Which country is [1] from?"],
        "1. Who is the father of Dorothea Of Denmark, Duchess Of Mecklenburg?": 'Relate("Dorothea Of Denmark, Duchess Of Mecklenburg", "father")',
        "2. Which country is [1] from?": 'Relate([1], "country of citizenship")',
    }),
    ("Who is the spouse of the performer of song Dreamworld (Robin Thicke Song)?", {
        "Who is the spouse of the performer of song Dreamworld (Robin Thicke Song)?": [
            "1. Who is the performer of song Dreamworld (Robin Thicke Song)?", "2. Who is the spouse of [1]?"],
        "1. Who is the performer of song Dreamworld (Robin Thicke Song)?": 'Relate("Dreamworld (Robin Thicke Song)", "performer")',
        "2. Who is the spouse of [1]?": 'Relate([1], "spouse")',
    }),
    ("Are both Matt Stephens (Politician) and David Townsend (Musician) from the same country?", {
        "Are both Matt Stephens (Politician) and David Townsend (Musician) from the same country?": [
            "1. Which country is Matt Stephens (Politician) from?", "2. Which country is David Townsend (Musician) from?",
            "3. Given [1] and [2], are both from the same country?"],
        "1. Which country is Matt Stephens (Politician) from?": 'Relate("Matt Stephens (Politician)", "country of citizenship")',
        "2. Which country is David Townsend (Musician) from?": 'Relate("David Townsend (Musician)", "country of citizenship")',
        "3. Given [1] and [2], are both from the same country?": "[DR]",
    }),
    ("Who is Asma Al-Assad's father-in-law?", {
        "Who is Asma Al-Assad's father-in-law?": [
            "1. Who is the spouse of Asma Al-Assad?", "2. Who is the father of [1]?"],
        "1. Who is the spouse of Asma Al-Assad?": 'Relate("Asma Al-Assad", "spouse")',
        "2. Who is the father of [1]?": 'Relate([1], "father")',
    }),
]


RULES = (
    "Dataset rules (2WikiMultiHopQA): give full names as the encyclopedia titles them (e.g. \"Siemowit III, "
    "Duke of Masovia\"), dates in full as day month year (\"19 May 1673\"), places without their country. "
    "For a question choosing between two films, songs or people, answer with the one chosen, spelled as in "
    'the question. Answer a yes/no question with ["yes"] or ["no"].'
)
