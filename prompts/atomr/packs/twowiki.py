"""The 2WikiMultiHopQA pack: planner demonstrations (compositional, comparison, inference, bridge comparison) and answer rules."""

from __future__ import annotations

from atomgraph.prompts.atomr.packs.common import TWOWIKI_DEV, Demo


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
    'the question. Answer a yes/no question with ["yes"] or ["no"], in lower case as the dataset writes them.'
)


# --- stage demonstrations -------------------------------------------------------------------------
# The authors' 2WikiMultiHopQA prompts hold 4 Search, 4 Relate, 3 Filter, 5 child/[DR] reasoning (one
# prompt for both), 4 direct-RAG and 5 closed-book demonstrations; ours have the same counts, written
# on the planner's questions above (2wiki_dev_100; passages in our words, Canardo, Thomas, Yesugei and
# Gytha Thorkelsdóttir after HippoRAG's 2Wiki corpus) and three more comparison questions of that file (the
# answer contract refuses a title ending in "?", so Begrijpt U Nu Waarom Ik Huil? is no answer here).
_SOURCES = {
    "bigpicture": ("6d8ff48a0bdb11eba7f7acde48001122", "Who is the founder of the company which published Big Picture (Magazine)?"),
    "thomas": ("87e4e1e0088b11ebbd6fac1f6bf848b6",
               "Are Antoine Jean-Baptiste Thomas and Canardo (Rapper) of the same nationality?"),
    "temuge": ("01e265d20bdc11eba7f7acde48001122", "Where did Temüge's father die?"),
    "lennox": ("9231021e0bb011ebab90acde48001122", "Who is Elizabeth Stuart, Countess Of Lennox's mother-in-law?"),
    "begrijpt": ("5be3ae32084f11ebbd56ac1f6bf848b6",
                 "Which film has the director died later, Begrijpt U Nu Waarom Ik Huil? or We Faw Down?"),
    "viacheslav": ("b01b7cc40baf11ebab90acde48001122", "Who is Viacheslav I Of Kiev's maternal grandfather?"),
    "rece": ("ce4f63cc0bdc11eba7f7acde48001122", "Where did the director of film Ręce Do Góry study?"),
    "gregory": ("4667bf20087311ebbd66ac1f6bf848b6", "Was Augusta, Lady Gregory or Luis Yáñez born first?"),
    "assad": ("5ead80ee0baf11ebab90acde48001122", "Who is Asma Al-Assad's father-in-law?"),
    "dreamworld": ("f42ce6e60bdc11eba7f7acde48001122",
                   "Who is the spouse of the performer of song Dreamworld (Robin Thicke Song)?"),
    "schlitzer": ("4e7c40ed08ea11ebbda7ac1f6bf848b6", "Are Biff Schlitzer and Ryan Groy both from the same country?"),
    "imagine": ("77119398087411ebbd67ac1f6bf848b6", "Which film was released earlier, The Apocalypse Code or Just Imagine?"),
    "kakwa": ("39e5fd3308ea11ebbda7ac1f6bf848b6", "Are Kakwa River and Bighead River located in the same country?"),
}


def _d(key: str, text: str) -> Demo:
    source_id, question = _SOURCES[key]
    return Demo(text, TWOWIKI_DEV, source_id, question)


EXAMPLES: dict[str, list[Demo]] = {
    "search": [
        _d("thomas", """Retrieved Knowledge:
Wikipedia Passages:
[1] Canardo (rapper) | Hakim Mouhid (born 1984 in Trappes), known on stage as Canardo, is a French rapper, songwriter and producer, brother of the rapper La Fouine.
[2] Canard | Canard is a French word for duck, used in English for a false news report.

Question: Who is Canardo (Rapper)?
Answer: Passage [1] is the rapper the question names; passage [2] is an unrelated word. So the answer is: (1) Paraphrase Answer: Canardo (Rapper) is Canardo (rapper), the French rapper Hakim Mouhid; (2) Answer List: ["Canardo (rapper)"]"""),
        _d("viacheslav", """Retrieved Knowledge:
Wikipedia Passages:
[1] Gytha Thorkelsdóttir | Gytha Thorkelsdóttir (997 - about 1069) was a Danish noblewoman, the mother of King Harold Godwinson.
[2] Gytha of Wessex | Gytha of Wessex was a daughter of King Harold Godwinson; she married Vladimir II Monomakh, Grand Prince of Kiev.

Question: Who is Gytha? (mother of Viacheslav I of Kiev)
Answer: Viacheslav I of Kiev was a son of Vladimir II Monomakh, so his mother is the Gytha of passage [2], not Harold's mother in passage [1]. So the answer is: (1) Paraphrase Answer: The Gytha meant is Gytha of Wessex, wife of Vladimir II Monomakh; (2) Answer List: ["Gytha of Wessex"]"""),
        _d("rece", """Retrieved Knowledge:
Wikipedia Passages:
[1] Ręce do góry | Ręce do góry (Hands Up!) is a Polish film by Jerzy Skolimowski, made in 1967 and released only in 1981.

Question: What is the film Ręce Do Góry?
Answer: Passage [1] describes the film the question names. So the answer is: (1) Paraphrase Answer: The film Ręce Do Góry is Jerzy Skolimowski's Polish film Ręce do góry; (2) Answer List: ["Ręce do góry"]"""),
        _d("bigpicture", """Retrieved Knowledge:
Wikipedia Passages:
[1] Big Picture (magazine) | Big Picture is a free educational magazine about biology and medicine for older school students, published by the Wellcome Trust.
[2] The Big Picture (2010 film) | The Big Picture is a 2010 French thriller directed by Éric Lartigau.

Question: What is Big Picture (Magazine)?
Answer: The question asks for the magazine, described in passage [1]; passage [2] is a film. So the answer is: (1) Paraphrase Answer: Big Picture (Magazine) is the Wellcome Trust's educational magazine Big Picture (magazine); (2) Answer List: ["Big Picture (magazine)"]"""),
    ],
    "relate": [
        _d("temuge", """Retrieved Knowledge:
Wikipedia Passages:
[1] Yesugei | Yesugei was a chief of the Khamag Mongol confederation and the father of Temüjin (Genghis Khan) and of Temüge; he died in the Khamag Mongol lands after Tatars poisoned him.

Question: Where did Yesugei die?
Answer: Passage [1] says he died in the Khamag Mongol lands. So the answer is: (1) Paraphrase Answer: Yesugei died in Khamag Mongol; (2) Answer List: ["Khamag Mongol"]"""),
        _d("lennox", """Retrieved Knowledge:
Wikipedia Passages:
[1] Charles Stuart, 1st Earl of Lennox | Charles Stuart (1555 - 1576) was a son of Matthew Stuart, 4th Earl of Lennox, and Margaret Douglas; he married Elizabeth Cavendish and was the father of Arbella Stuart.

Question: Who is the mother of Charles Stuart, 1st Earl of Lennox?
Answer: Passage [1] names Margaret Douglas as his mother. So the answer is: (1) Paraphrase Answer: The mother of Charles Stuart, 1st Earl of Lennox is Margaret Douglas; (2) Answer List: ["Margaret Douglas"]"""),
        _d("begrijpt", """Retrieved Knowledge:
Wikipedia Passages:
[1] Louis van Gasteren | Louis van Gasteren (1922 - 10 May 2016) was a Dutch film director and artist.

Question: When did Louis van Gasteren die?
Answer: Passage [1] gives the date of death. So the answer is: (1) Paraphrase Answer: Louis van Gasteren died on 10 May 2016; (2) Answer List: ["10 May 2016"]"""),
        _d("dreamworld", """Retrieved Knowledge:
Wikipedia Passages:
[1] Robin Thicke | Robin Thicke is an American singer and songwriter, son of the actor Alan Thicke.

Question: Who is the spouse of Robin Thicke?
Answer: Passage [1] does not name a spouse; I know he was married to the actress Paula Patton from 2005 to 2015. So the answer is: (1) Paraphrase Answer: Robin Thicke's spouse was Paula Patton; (2) Answer List: ["Paula Patton"]"""),
    ],
    "filter": [
        _d("thomas", """Retrieved Knowledge:
Wikipedia Passages:
[1] Antoine Jean-Baptiste Thomas | Antoine Jean-Baptiste Thomas (1791 - 1833) was a French painter and lithographer.
[2] Canardo (rapper) | Canardo is a French rapper born in Trappes.

Condition: French
Question: Who among Antoine Jean-Baptiste Thomas, Canardo (rapper) is French? (Filter condition: French)
Answer: Passages [1] and [2] both call them French. So the answer is: (1) Paraphrase Answer: Both Antoine Jean-Baptiste Thomas and Canardo (rapper) are French; (2) Answer List: ["Antoine Jean-Baptiste Thomas", "Canardo (rapper)"]"""),
        _d("begrijpt", """Retrieved Knowledge:
Wikipedia Passages:
[1] We Faw Down | We Faw Down is a 1928 Laurel and Hardy short comedy directed by Leo McCarey.
[2] Begrijpt u nu waarom ik huil? | Begrijpt u nu waarom ik huil? is a 1969 Dutch documentary by Louis van Gasteren.

Condition: directed by Leo McCarey
Question: Which of Begrijpt U Nu Waarom Ik Huil?, We Faw Down was directed by Leo McCarey? (Filter condition: directed by Leo McCarey)
Answer: Passage [1] names Leo McCarey as director of We Faw Down; the other film is by Louis van Gasteren. So the answer is: (1) Paraphrase Answer: We Faw Down was directed by Leo McCarey; (2) Answer List: ["We Faw Down"]"""),
        _d("assad", """Retrieved Knowledge:
Wikipedia Passages:
[1] Bashar al-Assad | Bashar al-Assad, who became President of Syria in 2000, is the son of Hafez al-Assad and the husband of Asma al-Assad.
[2] Rifaat al-Assad | Rifaat al-Assad is a younger brother of Hafez al-Assad.

Condition: father of Bashar al-Assad
Question: Who among Hafez al-Assad, Rifaat al-Assad is the father of Bashar al-Assad? (Filter condition: father of Bashar al-Assad)
Answer: Passage [1] says Bashar is Hafez al-Assad's son; Rifaat is his uncle. So the answer is: (1) Paraphrase Answer: The father of Bashar al-Assad is Hafez al-Assad; (2) Answer List: ["Hafez al-Assad"]"""),
    ],
    "child_reasoning": [
        _d("viacheslav", """Child questions and answers:
Q: 1. Who is the mother of Viacheslav I Of Kiev? A: ["Gytha of Wessex"]
Q: 2. Who is the father of [1]? A: The father of Gytha of Wessex is Harold Godwinson. ["Harold Godwinson"]

Question: Who is Viacheslav I Of Kiev's maternal grandfather?
Answer: His mother is Gytha of Wessex, whose father is Harold Godwinson. So the answer is: (1) Paraphrase Answer: Viacheslav I of Kiev's maternal grandfather is Harold Godwinson; (2) Answer List: ["Harold Godwinson"]"""),
        _d("lennox", """Child questions and answers:
Q: 1. Who is the spouse of Elizabeth Stuart, Countess Of Lennox? A: ["Charles Stuart, 1st Earl of Lennox"]
Q: 2. Who is the mother of [1]? A: The mother of Charles Stuart, 1st Earl of Lennox is Margaret Douglas. ["Margaret Douglas"]

Question: Who is Elizabeth Stuart, Countess Of Lennox's mother-in-law?
Answer: Her husband is Charles Stuart, 1st Earl of Lennox, whose mother is Margaret Douglas. So the answer is: (1) Paraphrase Answer: Elizabeth Stuart, Countess of Lennox's mother-in-law is Margaret Douglas; (2) Answer List: ["Margaret Douglas"]"""),
        _d("temuge", """Child questions and answers:
Q: 1. Who is the father of Temüge? A: ["Yesugei"]
Q: 2. Where did [1] die? A: Yesugei died in Khamag Mongol. ["Khamag Mongol"]

Question: Where did Temüge's father die?
Answer: Temüge's father Yesugei died in Khamag Mongol. So the answer is: (1) Paraphrase Answer: Temüge's father died in Khamag Mongol; (2) Answer List: ["Khamag Mongol"]"""),
        _d("bigpicture", """Child questions and answers:
Q: 1. Which company published Big Picture (Magazine)? A: ["Wellcome Trust"]
Q: 2. Who is the founder of [1]? A: []

Question: Who is the founder of the company which published Big Picture (Magazine)?
Answer: The publisher is the Wellcome Trust; question 2 found nothing, but I know the trust was founded under the will of Henry Wellcome. So the answer is: (1) Paraphrase Answer: The publisher of Big Picture was founded by Henry Wellcome; (2) Answer List: ["Henry Wellcome"]"""),
        _d("rece", """Child questions and answers:
Q: 1. Who is the director of film Ręce Do Góry? A: ["Jerzy Skolimowski"]
Q: 2. Where did [1] study? A: Jerzy Skolimowski studied at the National Film School in Łódź. ["National Film School in Łódź"]

Question: Where did the director of film Ręce Do Góry study?
Answer: The film is by Jerzy Skolimowski, who studied at the National Film School in Łódź. So the answer is: (1) Paraphrase Answer: The director of Ręce Do Góry studied at the National Film School in Łódź; (2) Answer List: ["National Film School in Łódź"]"""),
    ],
    "sibling_reasoning": [
        _d("thomas", """Referenced questions and answers:
Q: 1. What is the nationality of Antoine Jean-Baptiste Thomas? A: ["France"]
Q: 2. What is the nationality of Canardo (Rapper)? A: ["France"]

Question: Given [1] and [2], are they of the same nationality?
Answer: Both answers are France. So the answer is: (1) Paraphrase Answer: Yes, both are French; (2) Answer List: ["yes"]"""),
        _d("imagine", """Referenced questions and answers:
Q: 1. When was The Apocalypse Code released? A: ["2007"]
Q: 2. When was Just Imagine released? A: ["1930"]

Question: Given [1] and [2], which film was released earlier?
Answer: 1930 is earlier than 2007. So the answer is: (1) Paraphrase Answer: Just Imagine was released earlier than The Apocalypse Code; (2) Answer List: ["Just Imagine"]"""),
        _d("gregory", """Referenced questions and answers:
Q: 1. When was Augusta, Lady Gregory born? A: ["15 March 1852"]
Q: 2. When was Luis Yáñez born? A: ["1943"]

Question: Given [1] and [2], who was born first, Augusta, Lady Gregory or Luis Yáñez?
Answer: 1852 is before 1943. So the answer is: (1) Paraphrase Answer: Augusta, Lady Gregory was born first; (2) Answer List: ["Augusta, Lady Gregory"]"""),
        _d("schlitzer", """Referenced questions and answers:
Q: 1. Which country is Biff Schlitzer from? A: ["United States"]
Q: 2. Which country is Ryan Groy from? A: ["United States"]

Question: Given [1] and [2], are both from the same country?
Answer: Both answers are the United States. So the answer is: (1) Paraphrase Answer: Yes, Biff Schlitzer and Ryan Groy are both from the United States; (2) Answer List: ["yes"]"""),
        _d("kakwa", """Referenced questions and answers:
Q: 1. In which country is Kakwa River? A: ["Canada"]
Q: 2. In which country is Bighead River? A: []

Question: Given [1] and [2], are both rivers located in the same country?
Answer: Question 2 has no answer, but the Bighead River flows in Ontario, Canada, and the Kakwa River is in Canada too. So the answer is: (1) Paraphrase Answer: Yes, both rivers are in Canada; (2) Answer List: ["yes"]"""),
    ],
    "direct_rag": [
        _d("dreamworld", """Retrieved Knowledge:
Wikipedia Passages:
[1] Dreamworld (Robin Thicke song) | Dreamworld is a song by the American singer Robin Thicke.
[2] Robin Thicke | Robin Thicke married the actress Paula Patton in 2005; they divorced in 2015.

Question: Who is the spouse of the performer of song Dreamworld (Robin Thicke Song)?
Answer: Passage [1] gives Robin Thicke as the performer and passage [2] his wife. So the answer is: (1) Paraphrase Answer: The performer of Dreamworld, Robin Thicke, was married to Paula Patton; (2) Answer List: ["Paula Patton"]"""),
        _d("temuge", """Retrieved Knowledge:
Wikipedia Passages:
[1] Temüge | Temüge was the youngest brother of Genghis Khan, a son of Yesugei and Hoelun.
[2] Yesugei | Yesugei, chief of the Khamag Mongol confederation, died in the Khamag Mongol lands after being poisoned by Tatars.

Question: Where did Temüge's father die?
Answer: Passage [1] names his father Yesugei and passage [2] where Yesugei died. So the answer is: (1) Paraphrase Answer: Temüge's father died in Khamag Mongol; (2) Answer List: ["Khamag Mongol"]"""),
        _d("rece", """Retrieved Knowledge:
Wikipedia Passages:
[1] Ręce do góry | Ręce do góry is a 1967 Polish film written and directed by Jerzy Skolimowski.
[2] Jerzy Skolimowski | Jerzy Skolimowski is a Polish director who graduated from the National Film School in Łódź.

Question: Where did the director of film Ręce Do Góry study?
Answer: Passage [1] names the director and passage [2] his school. So the answer is: (1) Paraphrase Answer: The director of Ręce Do Góry studied at the National Film School in Łódź; (2) Answer List: ["National Film School in Łódź"]"""),
        _d("viacheslav", """Retrieved Knowledge:
Wikipedia Passages:
[1] Viacheslav I of Kiev | Viacheslav I was Grand Prince of Kiev, a son of Vladimir II Monomakh and Gytha of Wessex.

Question: Who is Viacheslav I Of Kiev's maternal grandfather?
Answer: Passage [1] names his mother Gytha of Wessex; I know she was a daughter of Harold Godwinson. So the answer is: (1) Paraphrase Answer: Viacheslav I of Kiev's maternal grandfather is Harold Godwinson; (2) Answer List: ["Harold Godwinson"]"""),
    ],
    "closed_book": [
        _d("lennox", """Question: Who is Elizabeth Stuart, Countess Of Lennox's mother-in-law?
Answer: Elizabeth Stuart married Charles Stuart, 1st Earl of Lennox, whose mother was Margaret Douglas. So the answer is: (1) Paraphrase Answer: Her mother-in-law is Margaret Douglas; (2) Answer List: ["Margaret Douglas"]"""),
        _d("assad", """Question: Who is Asma Al-Assad's father-in-law?
Answer: Asma al-Assad is married to Bashar al-Assad, whose father was Hafez al-Assad. So the answer is: (1) Paraphrase Answer: Asma al-Assad's father-in-law is Hafez al-Assad; (2) Answer List: ["Hafez al-Assad"]"""),
        _d("bigpicture", """Question: Who is the founder of the company which published Big Picture (Magazine)?
Answer: Big Picture is published by the Wellcome Trust, which was founded under the will of Henry Wellcome. So the answer is: (1) Paraphrase Answer: The publisher of Big Picture was founded by Henry Wellcome; (2) Answer List: ["Henry Wellcome"]"""),
        _d("gregory", """Question: Was Augusta, Lady Gregory or Luis Yáñez born first?
Answer: Augusta, Lady Gregory was born in 1852; the Spanish politician Luis Yáñez was born in 1943. So the answer is: (1) Paraphrase Answer: Augusta, Lady Gregory was born first; (2) Answer List: ["Augusta, Lady Gregory"]"""),
        _d("thomas", """Question: Are Antoine Jean-Baptiste Thomas and Canardo (Rapper) of the same nationality?
Answer: Antoine Jean-Baptiste Thomas was a French painter and Canardo is a French rapper. So the answer is: (1) Paraphrase Answer: Yes, both are French; (2) Answer List: ["yes"]"""),
    ],
}
