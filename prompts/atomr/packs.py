"""ATOMR prompt packs: the few-shot demonstrations and answer rules of every ATOMR stage,
one pack per dataset style, chosen with one run parameter (``prompt_pack``; ``eval run`` on a
dataset picks that dataset's pack, see ``evaluation/datasets.py``).

The authors run ATOMR with dataset-specific prompts (12-22 planner demonstrations and 2-8
per operator for HotpotQA, 2WikiMultiHopQA, MuSiQue, CRAG, BlendQA) and dataset rules for
the answers (full names, numerals, yes/no). Ours follow the same decomposition patterns
(Search then Relate, Filter over candidates, ``[DR]`` comparisons and intersections) and
are written in our own words on questions of the train/dev files in ``../shared/data``
(``hotpotqa_dev_100``, ``2wiki_dev_100``, ``musique_dev_100``, HippoRAG's HotpotQA train),
never on test questions.

| pack | planner demonstrations | per operator / reasoning stage | answer rules |
|---|---|---|---|
| ``general`` | 4 (one per shape, from the dev files) | 4 | the common rules only |
| ``hotpotqa`` | 14 (bridge, comparison, Filter, intersection) | 4 | short spans, yes/no |
| ``2wiki`` | 13 (compositional, comparison, inference, bridge comparison) | 4 | full names, dates as written |
| ``musique`` | 12 (2-4 hop chains) | 4 | short spans |

Each stage renders its pack (:func:`render_for`): the prompt templates carry ``{examples}``
and ``{rules}``, filled from the pack named by the ``pack`` input (default ``general``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from atomgraph.prompts.atomr.templating import UNKNOWN_RULE

# --- HotpotQA style: bridge and comparison questions over Wikipedia ------------------------------
HOTPOTQA_PLAN = [
    ("What language were books being translated into during the era of Haymo of Faversham?", {
        "What language were books being translated into during the era of Haymo of Faversham?": [
            "1. Who was Haymo of Faversham?", "2. During which era did [1] live?",
            "3. What language were books being translated into during [2]?"],
        "1. Who was Haymo of Faversham?": 'Search("Haymo of Faversham")',
        "2. During which era did [1] live?": 'Relate([1], "era")',
        "3. What language were books being translated into during [2]?": 'Relate([2], "language books were translated into")',
    }),
    ("Are Christopher Nolan and Sathish Kalathil both film directors?", {
        "Are Christopher Nolan and Sathish Kalathil both film directors?": [
            "1. What is the occupation of Christopher Nolan?", "2. What is the occupation of Sathish Kalathil?",
            "3. Given [1] and [2], are both of them film directors?"],
        "1. What is the occupation of Christopher Nolan?": 'Relate("Christopher Nolan", "occupation")',
        "2. What is the occupation of Sathish Kalathil?": 'Relate("Sathish Kalathil", "occupation")',
        "3. Given [1] and [2], are both of them film directors?": "[DR]",
    }),
    ("Which band was formed first The Exies or Circus Diablo ?", {
        "Which band was formed first The Exies or Circus Diablo ?": [
            "1. When was The Exies formed?", "2. When was Circus Diablo formed?",
            "3. Given [1] and [2], which band was formed first, The Exies or Circus Diablo?"],
        "1. When was The Exies formed?": 'Relate("The Exies", "year formed")',
        "2. When was Circus Diablo formed?": 'Relate("Circus Diablo", "year formed")',
        "3. Given [1] and [2], which band was formed first, The Exies or Circus Diablo?": "[DR]",
    }),
    ("At the 2011 census, what was he population of the city where Kerry Saxby-Junna was born?", {
        "At the 2011 census, what was he population of the city where Kerry Saxby-Junna was born?": [
            "1. In which city was Kerry Saxby-Junna born?", "2. What was the population of [1] at the 2011 census?"],
        "1. In which city was Kerry Saxby-Junna born?": 'Relate("Kerry Saxby-Junna", "place of birth")',
        "2. What was the population of [1] at the 2011 census?": 'Relate([1], "population at the 2011 census")',
    }),
    ("Who directed the film that was shot in or around Leland, North Carolina in 1986", {
        "Who directed the film that was shot in or around Leland, North Carolina in 1986": [
            "1. Which film was shot in or around Leland, North Carolina in 1986?", "2. Who directed [1]?"],
        "1. Which film was shot in or around Leland, North Carolina in 1986?":
            'Search("film shot in Leland, North Carolina", "1986 film")',
        "2. Who directed [1]?": 'Relate([1], "director")',
    }),
    ("Are Watertown International Airport and Alexandria International Airport both airports in the same state ?", {
        "Are Watertown International Airport and Alexandria International Airport both airports in the same state ?": [
            "1. In which state is Watertown International Airport?", "2. In which state is Alexandria International Airport?",
            "3. Given [1] and [2], are both airports in the same state?"],
        "1. In which state is Watertown International Airport?": 'Relate("Watertown International Airport", "state")',
        "2. In which state is Alexandria International Airport?": 'Relate("Alexandria International Airport", "state")',
        "3. Given [1] and [2], are both airports in the same state?": "[DR]",
    }),
    ("Grace Krilanovich's first novel was published by an independent mom-and-pop publishing house that was founded in 2005, and is based where?", {
        "Grace Krilanovich's first novel was published by an independent mom-and-pop publishing house that was founded in 2005, and is based where?": [
            "1. What was Grace Krilanovich's first novel?", "2. Which publishing house published [1]?", "3. Where is [2] based?"],
        "1. What was Grace Krilanovich's first novel?": 'Relate("Grace Krilanovich", "first novel")',
        "2. Which publishing house published [1]?": 'Relate([1], "publisher")',
        "3. Where is [2] based?": 'Relate([2], "headquarters location")',
    }),
    ("Which singer is American, Mark King or Nick Hexum?", {
        "Which singer is American, Mark King or Nick Hexum?": [
            "1. Who are the singers Mark King and Nick Hexum?", "2. Who among [1] is American?"],
        "1. Who are the singers Mark King and Nick Hexum?": 'Search("Mark King, Nick Hexum", "singer")',
        "2. Who among [1] is American?": 'Filter([1], "American")',
    }),
    ("Who is the oldest, Sid Haig or Vic Darchinyan?", {
        "Who is the oldest, Sid Haig or Vic Darchinyan?": [
            "1. When was Sid Haig born?", "2. When was Vic Darchinyan born?",
            "3. Given [1] and [2], who is the oldest, Sid Haig or Vic Darchinyan?"],
        "1. When was Sid Haig born?": 'Relate("Sid Haig", "date of birth")',
        "2. When was Vic Darchinyan born?": 'Relate("Vic Darchinyan", "date of birth")',
        "3. Given [1] and [2], who is the oldest, Sid Haig or Vic Darchinyan?": "[DR]",
    }),
    ("In what year was the man that resigned as the president of Israel before the Israeli presidential election, 2000 born?", {
        "In what year was the man that resigned as the president of Israel before the Israeli presidential election, 2000 born?": [
            "1. Who resigned as the president of Israel before the Israeli presidential election, 2000?", "2. In what year was [1] born?"],
        "1. Who resigned as the president of Israel before the Israeli presidential election, 2000?": [
            "3. What is the Israeli presidential election, 2000?", "4. Which president of Israel resigned before [3]?"],
        "2. In what year was [1] born?": 'Relate([1], "date of birth")',
        "3. What is the Israeli presidential election, 2000?": 'Search("Israeli presidential election, 2000")',
        "4. Which president of Israel resigned before [3]?": 'Relate([3], "president who resigned before it")',
    }),
    ("Who performed in both Welcome to the Show and the band f(x)?", {
        "Who performed in both Welcome to the Show and the band f(x)?": [
            "1. Who performed in Welcome to the Show?", "2. Who are the members of the band f(x)?",
            "3. Given [1] and [2], who appears in both?"],
        "1. Who performed in Welcome to the Show?": [
            "4. What is Welcome to the Show?", "5. Who performed in [4]?"],
        "2. Who are the members of the band f(x)?": 'Relate("f(x) (band)", "members")',
        "3. Given [1] and [2], who appears in both?": "[DR]",
        "4. What is Welcome to the Show?": 'Search("Welcome to the Show")',
        "5. Who performed in [4]?": 'Relate([4], "cast member")',
    }),
    ("Toad Hall is a residential hall in a university located in what Australian city?", {
        "Toad Hall is a residential hall in a university located in what Australian city?": [
            "1. Which university has the residential hall Toad Hall?", "2. In what Australian city is [1] located?"],
        "1. Which university has the residential hall Toad Hall?": 'Search("Toad Hall", "residential hall of an Australian university")',
        "2. In what Australian city is [1] located?": 'Relate([1], "city")',
    }),
    ("Which plant is larger, the Pterocarya or the Cotula?", {
        "Which plant is larger, the Pterocarya or the Cotula?": [
            "1. How large does the Pterocarya grow?", "2. How large does the Cotula grow?",
            "3. Given [1] and [2], which plant is larger, the Pterocarya or the Cotula?"],
        "1. How large does the Pterocarya grow?": 'Relate("Pterocarya", "size")',
        "2. How large does the Cotula grow?": 'Relate("Cotula", "size")',
        "3. Given [1] and [2], which plant is larger, the Pterocarya or the Cotula?": "[DR]",
    }),
    ("What is the length of the river into which Pack Creek runs after it goes through the Spanish Valley?", {
        "What is the length of the river into which Pack Creek runs after it goes through the Spanish Valley?": [
            "1. Into which river does Pack Creek run after the Spanish Valley?", "2. What is the length of [1]?"],
        "1. Into which river does Pack Creek run after the Spanish Valley?": 'Relate("Pack Creek", "mouth of the watercourse")',
        "2. What is the length of [1]?": 'Relate([1], "length")',
    }),
]

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

# --- MuSiQue style: chains of two to four hops, often through a described entity -----------------
MUSIQUE_PLAN = [
    ("Who was the father of the person who issued the Tamworth manifesto?", {
        "Who was the father of the person who issued the Tamworth manifesto?": [
            "1. Who issued the Tamworth manifesto?", "2. Who was the father of [1]?"],
        "1. Who issued the Tamworth manifesto?": 'Relate("Tamworth Manifesto", "author")',
        "2. Who was the father of [1]?": 'Relate([1], "father")',
    }),
    ("What is the parent company of the record label releasing Cold Turkey?", {
        "What is the parent company of the record label releasing Cold Turkey?": [
            "1. Which record label released Cold Turkey?", "2. What is the parent company of [1]?"],
        "1. Which record label released Cold Turkey?": [
            "3. What is Cold Turkey?", "4. Which record label released [3]?"],
        "2. What is the parent company of [1]?": 'Relate([1], "parent organization")',
        "3. What is Cold Turkey?": 'Search("Cold Turkey", "song")',
        "4. Which record label released [3]?": 'Relate([3], "record label")',
    }),
    ("When did the person who ended the Archaemenid Empire by conquest in 330 BC die?", {
        "When did the person who ended the Archaemenid Empire by conquest in 330 BC die?": [
            "1. Who ended the Achaemenid Empire by conquest in 330 BC?", "2. When did [1] die?"],
        "1. Who ended the Achaemenid Empire by conquest in 330 BC?": 'Relate("Achaemenid Empire", "conquered by")',
        "2. When did [1] die?": 'Relate([1], "date of death")',
    }),
    ("Who is the spouse of the person who does the voice for Smokey the Bear?", {
        "Who is the spouse of the person who does the voice for Smokey the Bear?": [
            "1. Who does the voice for Smokey the Bear?", "2. Who is the spouse of [1]?"],
        "1. Who does the voice for Smokey the Bear?": 'Relate("Smokey Bear", "voice actor")',
        "2. Who is the spouse of [1]?": 'Relate([1], "spouse")',
    }),
    ("In which county did Snappy Tomato Pizza form?", {
        "In which county did Snappy Tomato Pizza form?": [
            "1. In which city did Snappy Tomato Pizza form?", "2. In which county is [1]?"],
        "1. In which city did Snappy Tomato Pizza form?": 'Relate("Snappy Tomato Pizza", "location of formation")',
        "2. In which county is [1]?": 'Relate([1], "located in the administrative territorial entity")',
    }),
    ("Which is the body of water by the birthplace of Christopher Harris?", {
        "Which is the body of water by the birthplace of Christopher Harris?": [
            "1. Where was Christopher Harris born?", "2. Which body of water is by [1]?"],
        "1. Where was Christopher Harris born?": 'Relate("Christopher Harris", "place of birth")',
        "2. Which body of water is by [1]?": 'Relate([1], "located in or next to body of water")',
    }),
    ("What date did the creator of The Blind Girl Die?", {
        "What date did the creator of The Blind Girl Die?": [
            "1. Who created The Blind Girl?", "2. On what date did [1] die?"],
        "1. Who created The Blind Girl?": [
            "3. What is The Blind Girl?", "4. Who created [3]?"],
        "2. On what date did [1] die?": 'Relate([1], "date of death")',
        "3. What is The Blind Girl?": 'Search("The Blind Girl", "painting")',
        "4. Who created [3]?": 'Relate([3], "creator")',
    }),
    ("Who was the father of Jujhar Singh's father?", {
        "Who was the father of Jujhar Singh's father?": [
            "1. Who was the father of Jujhar Singh?", "2. Who was the father of [1]?"],
        "1. Who was the father of Jujhar Singh?": 'Relate("Jujhar Singh", "father")',
        "2. Who was the father of [1]?": 'Relate([1], "father")',
    }),
    ("Mehmet Hayri Tarhan's birthplace is the capital of what municipality?", {
        "Mehmet Hayri Tarhan's birthplace is the capital of what municipality?": [
            "1. Where was Mehmet Hayri Tarhan born?", "2. Of what municipality is [1] the capital?"],
        "1. Where was Mehmet Hayri Tarhan born?": 'Relate("Mehmet Hayri Tarhan", "place of birth")',
        "2. Of what municipality is [1] the capital?": 'Relate([1], "capital of")',
    }),
    ("The city where WOCA is located is in which part of Florida?", {
        "The city where WOCA is located is in which part of Florida?": [
            "1. In which city is WOCA located?", "2. In which part of Florida is [1]?"],
        "1. In which city is WOCA located?": [
            "3. What is WOCA?", "4. In which city is [3] located?"],
        "2. In which part of Florida is [1]?": 'Relate([1], "region of Florida")',
        "3. What is WOCA?": 'Search("WOCA", "radio station in Florida")',
        "4. In which city is [3] located?": 'Relate([3], "city of license")',
    }),
    ("Who is the spouse of the actor who plays Paul in Breakfast at Tiffany's?", {
        "Who is the spouse of the actor who plays Paul in Breakfast at Tiffany's?": [
            "1. Who plays Paul in Breakfast at Tiffany's?", "2. Who is the spouse of [1]?"],
        "1. Who plays Paul in Breakfast at Tiffany's?": 'Relate("Breakfast at Tiffany\'s", "actor who plays Paul")',
        "2. Who is the spouse of [1]?": 'Relate([1], "spouse")',
    }),
    ("What recognition did the Jack Goes Boating director receive?", {
        "What recognition did the Jack Goes Boating director receive?": [
            "1. Who directed Jack Goes Boating?", "2. What recognition did [1] receive?"],
        "1. Who directed Jack Goes Boating?": 'Relate("Jack Goes Boating", "director")',
        "2. What recognition did [1] receive?": 'Relate([1], "award received")',
    }),
]

# Operator and reasoning demonstrations (4 per stage), on train/dev questions of ../shared/data
# and on facts of the general kind; in our words. Each is the human turn's text and the reply.
EXAMPLES: dict[str, list[str]] = {
    "search": [
        """Retrieved Knowledge:
Wikipedia Passages:
[1] John Williams | John Towner Williams (born 1932) is an American composer and conductor whose film scores include Jaws, Star Wars and Schindler's List.
[2] John Williams (guitarist) | John Christopher Williams (born 1941) is an Australian classical guitarist.

Question: Who is John Williams? (film composer)
Answer: Passage [1] describes the American film composer; passage [2] is a guitarist. So the answer is: (1) Paraphrase Answer: John Williams the film composer is the American composer and conductor John Towner Williams; (2) Answer List: ["John Williams (composer)"]""",
        """Retrieved Knowledge:
Wikipedia Passages:
[1] Haymo of Faversham | Haymo of Faversham was an English Franciscan friar and scholastic theologian of the thirteenth century, minister general of his order.

Question: Who was Haymo of Faversham?
Answer: Passage [1] names one person of this name, a thirteenth-century English Franciscan. So the answer is: (1) Paraphrase Answer: Haymo of Faversham was a thirteenth-century English Franciscan friar; (2) Answer List: ["Haymo of Faversham"]""",
        """Retrieved Knowledge:
Wikipedia Passages:
[1] Toad Hall (Australian National University) | Toad Hall is a residential hall of the Australian National University in Canberra.
[2] Toad Hall | Toad Hall is the home of Mr. Toad in The Wind in the Willows.

Question: Which university has the residential hall Toad Hall? (residential hall of an Australian university)
Answer: Passage [1] is the residential hall; passage [2] is the fictional house. So the answer is: (1) Paraphrase Answer: Toad Hall is a residential hall of the Australian National University; (2) Answer List: ["Australian National University"]""",
        """Retrieved Knowledge:
Wikipedia Passages:
[1] Mark King (musician) | Mark King is an English bass guitarist and singer, the lead vocalist of Level 42.
[2] Nick Hexum | Nicholas Lofton Hexum is an American singer and guitarist of the band 311.

Question: Who are the singers Mark King and Nick Hexum? (singer)
Answer: The passages describe both singers. So the answer is: (1) Paraphrase Answer: They are Mark King of Level 42 and Nick Hexum of 311; (2) Answer List: ["Mark King", "Nick Hexum"]""",
    ],
    "relate": [
        """Retrieved Knowledge:
Wikipedia Passages:
[1] Ingmar Bergman | Ernst Ingmar Bergman (14 July 1918 - 30 July 2007) was a Swedish film and theatre director, born in Uppsala to a Lutheran minister's family.
Wikidata Facts:
[1] Ingmar Bergman | place of birth: Uppsala

Question: In which city was Ingmar Bergman born?
Answer: Both the passage and the knowledge graph give Uppsala. So the answer is: (1) Paraphrase Answer: Ingmar Bergman was born in Uppsala; (2) Answer List: ["Uppsala"]""",
        """Retrieved Knowledge:
Google Results:
[1] Mars facts | Mars has two small moons, Phobos and Deimos, discovered by Asaph Hall in 1877.

Question: How many moons does Mars have?
Answer: The search result names two moons. So the answer is: (1) Paraphrase Answer: Mars has 2 moons; (2) Answer List: ["2"]""",
        """Retrieved Knowledge:
Wikipedia Passages:
[1] The Exies | The Exies are an American rock band from Los Angeles, formed in 1997.

Question: When was The Exies formed?
Answer: Passage [1] gives the year. So the answer is: (1) Paraphrase Answer: The Exies were formed in 1997; (2) Answer List: ["1997"]""",
        """Retrieved Knowledge:
Wikipedia Passages:
[1] Level 42 | Level 42 are an English jazz-funk band formed on the Isle of Wight in 1979, led by Mark King.

Question: Which albums did Level 42 release in 1985?
Answer: The passage does not list their albums and I do not know them well enough. So the answer is: (1) Paraphrase Answer: Unknown; (2) Answer List: []""",
    ],
    "filter": [
        """Retrieved Knowledge:
Wikipedia Passages:
[1] Neil Armstrong | Neil Armstrong was an American astronaut and the first person to walk on the Moon, on July 20, 1969.
[2] Buzz Aldrin | Buzz Aldrin was the lunar module pilot of Apollo 11 and the second person to walk on the Moon.

Condition: walked on the Moon
Question: Who among Neil Armstrong, Buzz Aldrin, Michael Collins walked on the Moon?
Answer: Passages [1] and [2] say Armstrong and Aldrin walked on the Moon; Collins stayed in orbit. So the answer is: (1) Paraphrase Answer: Neil Armstrong and Buzz Aldrin walked on the Moon; (2) Answer List: ["Neil Armstrong", "Buzz Aldrin"]""",
        """Retrieved Knowledge:
Wikipedia Passages:
[1] Nick Hexum | Nicholas Lofton Hexum is an American singer and guitarist of the band 311.

Condition: American
Question: Who among Mark King, Nick Hexum is American? (Filter condition: American)
Answer: Passage [1] says Nick Hexum is American; Mark King is English. So the answer is: (1) Paraphrase Answer: Nick Hexum is the American singer; (2) Answer List: ["Nick Hexum"]""",
        """Retrieved Knowledge:
Wikipedia Passages:
[1] Watertown International Airport | Watertown International Airport is a county-owned airport in Jefferson County, New York.
[2] Alexandria International Airport | Alexandria International Airport is a public airport in Alexandria, Louisiana.

Condition: located in Louisiana
Question: Which of Watertown International Airport, Alexandria International Airport is located in Louisiana?
Answer: Only passage [2] places an airport in Louisiana. So the answer is: (1) Paraphrase Answer: Alexandria International Airport is located in Louisiana; (2) Answer List: ["Alexandria International Airport"]""",
        """Retrieved Knowledge:
Wikidata Facts:
[1] Christopher Nolan | occupation: film director
[2] Sathish Kalathil | occupation: film director

Condition: film director
Question: Who among Christopher Nolan, Sathish Kalathil is a film director?
Answer: The knowledge graph lists both as film directors. So the answer is: (1) Paraphrase Answer: Christopher Nolan and Sathish Kalathil are both film directors; (2) Answer List: ["Christopher Nolan", "Sathish Kalathil"]""",
    ],
    "child_reasoning": [
        """Child questions and answers:
Q: 1. Who directed the 1957 film Wild Strawberries? A: ["Ingmar Bergman"]
Q: 2. In which city was [1] born? A: Ingmar Bergman was born in Uppsala. ["Uppsala"]

Question: In which city was the director of the 1957 film Wild Strawberries born?
Answer: Wild Strawberries was directed by Ingmar Bergman, who was born in Uppsala. So the answer is: (1) Paraphrase Answer: The director of Wild Strawberries, Ingmar Bergman, was born in Uppsala; (2) Answer List: ["Uppsala"]""",
        """Child questions and answers:
Q: 1. In which city was Kerry Saxby-Junna born? A: ["Ballina"]
Q: 2. What was the population of [1] at the 2011 census? A: Ballina had 6,960 people at the 2011 census. ["6,960"]

Question: At the 2011 census, what was the population of the city where Kerry Saxby-Junna was born?
Answer: She was born in Ballina, whose 2011 population was 6,960. So the answer is: (1) Paraphrase Answer: The city where Kerry Saxby-Junna was born had 6,960 people in 2011; (2) Answer List: ["6,960"]""",
        """Child questions and answers:
Q: 1. Who wrote the novel Frankenstein? A: ["Mary Shelley"]
Q: 2. Who wrote the novel Dracula? A: ["Bram Stoker"]
Q: 3. Given [1] and [2], were they written by the same person? A: They were written by different people. ["No"]

Question: Were Frankenstein and Dracula written by the same author?
Answer: Frankenstein is by Mary Shelley and Dracula by Bram Stoker. So the answer is: (1) Paraphrase Answer: No, they were written by different authors; (2) Answer List: ["No"]""",
        """Child questions and answers:
Q: 1. Who is the spouse of Asma Al-Assad? A: []
Q: 2. Who is the father of [1]? A: []

Question: Who is Asma Al-Assad's father-in-law?
Answer: The child answers are empty, but Asma al-Assad is married to Bashar al-Assad, whose father was Hafez al-Assad. So the answer is: (1) Paraphrase Answer: Asma Al-Assad's father-in-law is Hafez al-Assad; (2) Answer List: ["Hafez al-Assad"]""",
    ],
    "sibling_reasoning": [
        """Referenced questions and answers:
Q: 1. When was Ada Lovelace born? A: ["10 December 1815"]
Q: 2. When was Mary Shelley born? A: ["30 August 1797"]

Question: Given [1] and [2], who was born first, Ada Lovelace or Mary Shelley?
Answer: Mary Shelley was born in 1797, before Ada Lovelace in 1815. So the answer is: (1) Paraphrase Answer: Mary Shelley was born first; (2) Answer List: ["Mary Shelley"]""",
        """Referenced questions and answers:
Q: 2. Who among [1] walked on the Moon? A: Neil Armstrong and Buzz Aldrin walked on the Moon. ["Neil Armstrong", "Buzz Aldrin"]

Question: How many people are in [2]?
Answer: Question 2 lists two people. So the answer is: (1) Paraphrase Answer: 2 members of the crew walked on the Moon; (2) Answer List: ["2"]""",
        """Referenced questions and answers:
Q: 1. In which state is Watertown International Airport? A: ["New York"]
Q: 2. In which state is Alexandria International Airport? A: ["Louisiana"]

Question: Given [1] and [2], are both airports in the same state?
Answer: One is in New York and the other in Louisiana. So the answer is: (1) Paraphrase Answer: No, they are in different states; (2) Answer List: ["No"]""",
        """Referenced questions and answers:
Q: 1. Who performed in Welcome to the Show? A: ["Choi Jin-ri", "Kim Jong-kook"]
Q: 2. Who are the members of the band f(x)? A: ["Victoria Song", "Amber Liu", "Luna", "Choi Jin-ri", "Krystal Jung"]

Question: Given [1] and [2], who appears in both?
Answer: Choi Jin-ri is the only name in both lists. So the answer is: (1) Paraphrase Answer: Choi Jin-ri performed in Welcome to the Show and in f(x); (2) Answer List: ["Choi Jin-ri"]""",
    ],
    "direct_rag": [
        """Retrieved Knowledge:
Wikipedia Passages:
[1] Rosetta Stone | The Rosetta Stone is a granodiorite stele found in 1799 near Rosetta, Egypt.
[2] Jean-François Champollion | Champollion announced his decipherment of Egyptian hieroglyphs in 1822, working from the Rosetta Stone.

Question: Who deciphered the hieroglyphs of the stele found near Rosetta in 1799?
Answer: The stele is the Rosetta Stone; passage [2] says Champollion deciphered it. So the answer is: (1) Paraphrase Answer: The hieroglyphs of the Rosetta Stone were deciphered by Jean-François Champollion; (2) Answer List: ["Jean-François Champollion"]""",
        """Retrieved Knowledge:
Wikipedia Passages:
[1] Leland, North Carolina | Leland is a town in Brunswick County, North Carolina, near Wilmington.
[2] Maximum Overdrive | Maximum Overdrive is a 1986 film written and directed by Stephen King, filmed in and around Leland, North Carolina.

Question: Who directed the film that was shot in or around Leland, North Carolina in 1986?
Answer: Passage [2] says Maximum Overdrive was filmed around Leland in 1986 and directed by Stephen King. So the answer is: (1) Paraphrase Answer: The film was directed by Stephen King; (2) Answer List: ["Stephen King"]""",
        """Retrieved Knowledge:
Wikipedia Passages:
[1] Sid Haig | Sidney Eddie Mosesian (July 14, 1939 - September 21, 2019), known as Sid Haig, was an American actor.

Question: Who is the oldest, Sid Haig or Vic Darchinyan?
Answer: Sid Haig was born in 1939; Vic Darchinyan is a boxer born in 1975. So the answer is: (1) Paraphrase Answer: Sid Haig is older than Vic Darchinyan; (2) Answer List: ["Sid Haig"]""",
        """Retrieved Knowledge:
(no knowledge retrieved)

Question: In which country is the Rhine Falls?
Answer: No knowledge was retrieved; from my own knowledge the Rhine Falls are in Switzerland. So the answer is: (1) Paraphrase Answer: The Rhine Falls are in Switzerland; (2) Answer List: ["Switzerland"]""",
    ],
    "closed_book": [
        """Question: Which river flows through the capital of Hungary?
Answer: The capital of Hungary is Budapest, which lies on the Danube. So the answer is: (1) Paraphrase Answer: The Danube flows through Budapest; (2) Answer List: ["Danube"]""",
        """Question: Are Christopher Nolan and Sathish Kalathil both film directors?
Answer: Christopher Nolan is a film director; Sathish Kalathil is an Indian film director too. So the answer is: (1) Paraphrase Answer: Yes, both are film directors; (2) Answer List: ["Yes"]""",
        """Question: Who was the father of the person who issued the Tamworth Manifesto?
Answer: The Tamworth Manifesto was issued by Sir Robert Peel, whose father was Sir Robert Peel, 1st Baronet. So the answer is: (1) Paraphrase Answer: His father was Sir Robert Peel, 1st Baronet; (2) Answer List: ["Sir Robert Peel, 1st Baronet"]""",
        """Question: When did the person who ended the Achaemenid Empire by conquest in 330 BC die?
Answer: Alexander the Great conquered the Achaemenid Empire and died in 323 BC. So the answer is: (1) Paraphrase Answer: Alexander the Great died in 323 BC; (2) Answer List: ["323 BC"]""",
    ],
}


# The general pack: one question of each shape, from the dev files of ../shared/data (file, id):
# a bridge through a described entity (2wiki_dev_100, ba1542d00bd911eba7f7acde48001122), a comparison
# (hotpotqa_dev_100, 5adfdc7d55429942ec259b64), a count over a filtered set (hotpotqa_dev_100,
# 5ae0198455429942ec259c1e) and a one-hop question that is its own leaf (hotpotqa_dev_100,
# 5abb02fe554299232ef4a39f). The trees are ours.
GENERAL_PLAN = [
    (
        "What is the place of birth of the director of film Will Not End Here?",
        {
            "What is the place of birth of the director of film Will Not End Here?": [
                "1. Who directed the film Will Not End Here?",
                "2. What is the place of birth of [1]?",
            ],
            "1. Who directed the film Will Not End Here?": [
                "3. What is the film Will Not End Here?",
                "4. Who directed [3]?",
            ],
            "2. What is the place of birth of [1]?": 'Relate([1], "place of birth")',
            "3. What is the film Will Not End Here?": 'Search("Will Not End Here", "film")',
            "4. Who directed [3]?": 'Relate([3], "director")',
        },
    ),
    (
        "Who was older, George Atzerodt or Andrew Johnson?",
        {
            "Who was older, George Atzerodt or Andrew Johnson?": [
                "1. When was George Atzerodt born?",
                "2. When was Andrew Johnson born?",
                "3. Given [1] and [2], who was older, George Atzerodt or Andrew Johnson?",
            ],
            "1. When was George Atzerodt born?": 'Relate("George Atzerodt", "date of birth")',
            "2. When was Andrew Johnson born?": 'Relate("Andrew Johnson", "date of birth")',
            "3. Given [1] and [2], who was older, George Atzerodt or Andrew Johnson?": "[DR]",
        },
    ),
    (
        "How many times did the man who coached the 1986-87 UNLV Runnin' Rebels fail to win 20 games in a season?",
        {
            "How many times did the man who coached the 1986-87 UNLV Runnin' Rebels fail to win 20 games in a season?": [
                "1. What were the seasons coached by the man who coached the 1986-87 UNLV Runnin' Rebels?",
                "2. In which of [1] did his team win fewer than 20 games?",
                "3. How many seasons are in [2]?",
            ],
            "1. What were the seasons coached by the man who coached the 1986-87 UNLV Runnin' Rebels?": [
                "4. Who coached the 1986-87 UNLV Runnin' Rebels?",
                "5. What were the seasons coached by [4]?",
            ],
            "2. In which of [1] did his team win fewer than 20 games?": 'Filter([1], "fewer than 20 wins")',
            "3. How many seasons are in [2]?": "[DR]",
            "4. Who coached the 1986-87 UNLV Runnin' Rebels?": 'Relate("1986-87 UNLV Runnin\' Rebels", "head coach")',
            "5. What were the seasons coached by [4]?": 'Relate([4], "seasons as head coach")',
        },
    ),
    (
        "Anna Aglatova made her first public appearance at which Moscow theatre in 2005?",
        {"Anna Aglatova made her first public appearance at which Moscow theatre in 2005?":
         'Relate("Anna Aglatova", "Moscow theatre of her first public appearance in 2005")'},
    ),
]

RULES = {
    "general": "",
    "hotpotqa": (
        "Dataset rules (HotpotQA): answer with the shortest span an encyclopedia would use: the full name of a "
        "person, work, organisation or place, a year or a date as written, a number with its unit. "
        'Answer a yes/no question with ["yes"] or ["no"].'
    ),
    "2wiki": (
        "Dataset rules (2WikiMultiHopQA): give full names as the encyclopedia titles them (e.g. \"Siemowit III, "
        "Duke of Masovia\"), dates in full as day month year (\"19 May 1673\"), places without their country. "
        "For a question choosing between two films, songs or people, answer with the one chosen, spelled as in "
        'the question. Answer a yes/no question with ["yes"] or ["no"].'
    ),
    "musique": (
        "Dataset rules (MuSiQue): answer with a short span: a name, a date, a place or a number, as written in "
        "the passages; no explanation in the Answer List."
    ),
}


@dataclass(frozen=True)
class PromptPack:
    """The demonstrations and answer rules of one dataset style."""

    name: str
    plan_examples: list[tuple[str, dict[str, object]]]
    rules: str = ""
    examples: dict[str, list[str]] = field(default_factory=lambda: EXAMPLES)
    # Whether direct RAG may answer Unknown, as the authors' prompt for the dataset does (their
    # HotpotQA and 2Wiki direct-RAG prompts offer no Unknown; MuSiQue, CRAG and BlendQA do). The
    # closed-book answer never offers it (none of theirs does); Relate and child/sibling reasoning
    # always do, Search and Filter never (the authors' operator prompts).
    direct_rag_unknown: bool = True

    def plan_text(self) -> str:
        return "\n\n".join(
            f"Question: {q}\nDecomposition Tree: {json.dumps(tree, ensure_ascii=False)}" for q, tree in self.plan_examples
        )

    def examples_text(self, stage: str) -> str:
        return "\n\n".join(f"Example {i}.\n{ex}" for i, ex in enumerate(self.examples.get(stage, []), 1))

    def rules_text(self) -> str:
        return f"\n{self.rules}" if self.rules else ""

    def unknown_rule(self, stage: str) -> str:
        """The Unknown option for ``stage``'s instructions ("" where the authors offer none)."""
        return f" {UNKNOWN_RULE}" if stage == "direct_rag" and self.direct_rag_unknown else ""


PACKS: dict[str, PromptPack] = {
    "general": PromptPack("general", GENERAL_PLAN, RULES["general"]),
    "hotpotqa": PromptPack("hotpotqa", HOTPOTQA_PLAN, RULES["hotpotqa"], direct_rag_unknown=False),
    "2wiki": PromptPack("2wiki", TWOWIKI_PLAN, RULES["2wiki"], direct_rag_unknown=False),
    "musique": PromptPack("musique", MUSIQUE_PLAN, RULES["musique"]),
}
DEFAULT_PACK = "general"


def _norm_q(text: str) -> str:
    return " ".join("".join(c for c in str(text).lower() if c.isalnum() or c.isspace()).split())


def demonstration_questions(name: str | None) -> set[str]:
    """The questions pack ``name`` shows as demonstrations (planner questions and the questions
    of every stage's examples), normalised (lower case, letters and digits): an evaluation split
    leaves these out (``eval run`` says how many)."""
    pack = get_pack(name)
    out = {_norm_q(q) for q, _ in pack.plan_examples}
    for examples in pack.examples.values():
        for ex in examples:
            for line in ex.splitlines():
                if line.startswith("Question: "):
                    out.add(_norm_q(line[len("Question: "):].split(" (Filter condition:")[0]))
    return out


def is_demonstration(question: str, name: str | None) -> bool:
    return _norm_q(question) in demonstration_questions(name)


def get_pack(name: str | None) -> PromptPack:
    """The pack called ``name`` (None or "" is ``general``); ValueError naming the packs otherwise."""
    key = (name or DEFAULT_PACK).strip().lower()
    if key not in PACKS:
        raise ValueError(f"unknown prompt pack {name!r}; packs are {', '.join(PACKS)}")
    return PACKS[key]


def render_for(stage: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A stage's renderer: its inputs plus the chosen pack's ``examples`` and ``rules``."""

    def render(inputs: dict[str, Any]) -> dict[str, Any]:
        pack = get_pack(inputs.get("pack"))
        text = pack.plan_text() if stage == "plan" else pack.examples_text(stage)
        return {**inputs, "examples": text, "rules": pack.rules_text(), "unknown_rule": pack.unknown_rule(stage)}

    return render
