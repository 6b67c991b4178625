"""The HotpotQA pack: planner demonstrations (bridge, comparison, Filter, intersection) and answer rules."""

from __future__ import annotations

from atomgraph.prompts.atomr.packs.common import HOTPOTQA_DEV, HOTPOTQA_TRAIN, Demo


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
    ("The manuscript for Flute Sonata in C major, BWV 1033 is in the hand of a German musician whose godfather is whom?", {
        "The manuscript for Flute Sonata in C major, BWV 1033 is in the hand of a German musician whose godfather is whom?": [
            "1. In whose hand is the manuscript for Flute Sonata in C major, BWV 1033?", "2. Who is the godfather of [1]?"],
        "1. In whose hand is the manuscript for Flute Sonata in C major, BWV 1033?":
            'Relate("Flute Sonata in C major, BWV 1033", "manuscript written by")',
        "2. Who is the godfather of [1]?": 'Relate([1], "godparent")',
    }),
    ("Are both magazines, the Woman's Viewpoint and Pick Me Up, British publications?", {
        "Are both magazines, the Woman's Viewpoint and Pick Me Up, British publications?": [
            "1. In which country is the Woman's Viewpoint published?", "2. In which country is Pick Me Up published?",
            "3. Given [1] and [2], are both magazines British publications?"],
        "1. In which country is the Woman's Viewpoint published?": 'Relate("Woman\'s Viewpoint", "country of publication")',
        "2. In which country is Pick Me Up published?": 'Relate("Pick Me Up (magazine)", "country of publication")',
        "3. Given [1] and [2], are both magazines British publications?": "[DR]",
    }),
    ("The Women's National Basketball League includes the Adelaide team that was formed in what year?", {
        "The Women's National Basketball League includes the Adelaide team that was formed in what year?": [
            "1. Which Adelaide team plays in the Women's National Basketball League?", "2. In what year was [1] formed?"],
        "1. Which Adelaide team plays in the Women's National Basketball League?":
            'Search("Adelaide", "Women\'s National Basketball League team")',
        "2. In what year was [1] formed?": 'Relate([1], "year formed")',
    }),
    ("The director Armando Iannucci has an OBE. Does the director Puneet Sira also have one?", {
        "The director Armando Iannucci has an OBE. Does the director Puneet Sira also have one?": [
            "1. What honours has the director Puneet Sira received?", "2. Given [1], does Puneet Sira have an OBE?"],
        "1. What honours has the director Puneet Sira received?": 'Relate("Puneet Sira", "honours received")',
        "2. Given [1], does Puneet Sira have an OBE?": "[DR]",
    }),
]


RULES = (
    "Dataset rules (HotpotQA): answer with the shortest span an encyclopedia would use: the full name of a "
    "person, work, organisation or place, a year or a date as written, a number with its unit. "
    'Answer a yes/no question with ["yes"] or ["no"], in lower case as the dataset writes them.'
)


# --- stage demonstrations -------------------------------------------------------------------------
# The authors' HotpotQA prompts hold 4 Search, 7 Relate, 3 Filter, 6 child/[DR] reasoning (one prompt
# for both), 5 direct-RAG and 4 closed-book demonstrations; ours have the same counts, written on the
# planner's questions above (HippoRAG's HotpotQA train sample, passages paraphrased from its
# paragraphs; Pack Creek from hotpotqa_dev_100), so the stages add no question to leave out.
_SOURCES = {
    "haymo": (HOTPOTQA_TRAIN, "5a7decc75542995f4f40230f",
              "What language were books being translated into during the era of Haymo of Faversham?"),
    "nolan": (HOTPOTQA_TRAIN, "5ae40c465542996836b02c25", "Are Christopher Nolan and Sathish Kalathil both film directors?"),
    "exies": (HOTPOTQA_TRAIN, "5a7c1f325542996dd594b892", "Which band was formed first The Exies or Circus Diablo ?"),
    "saxby": (HOTPOTQA_TRAIN, "5ac3983a554299657fa290f5",
              "At the 2011 census, what was he population of the city where Kerry Saxby-Junna was born?"),
    "leland": (HOTPOTQA_TRAIN, "5a8718c25542991e771816c7",
               "Who directed the film that was shot in or around Leland, North Carolina in 1986"),
    "airports": (HOTPOTQA_TRAIN, "5a9096d85542995651fb51a3",
                 "Are Watertown International Airport and Alexandria International Airport both airports in the same state ?"),
    "krilanovich": (HOTPOTQA_TRAIN, "5ab3c131554299233954ff9c",
                    "Grace Krilanovich's first novel was published by an independent mom-and-pop publishing house that "
                    "was founded in 2005, and is based where?"),
    "hexum": (HOTPOTQA_TRAIN, "5adcfb015542990d50227d7e", "Which singer is American, Mark King or Nick Hexum?"),
    "haig": (HOTPOTQA_TRAIN, "5ab26ce1554299449642c89c", "Who is the oldest, Sid Haig or Vic Darchinyan?"),
    "weizman": (HOTPOTQA_TRAIN, "5a874fc95542994775f607cb",
                "In what year was the man that resigned as the president of Israel before the Israeli presidential "
                "election, 2000 born?"),
    "sulli": (HOTPOTQA_TRAIN, "5a77a5195542992a6e59df4c", "Who performed in both Welcome to the Show and the band f(x)?"),
    "toad": (HOTPOTQA_TRAIN, "5ae5fa555542996de7b71a9e",
             "Toad Hall is a residential hall in a university located in what Australian city?"),
    "pterocarya": (HOTPOTQA_TRAIN, "5a8ef1395542995a26add572", "Which plant is larger, the Pterocarya or the Cotula?"),
    "packcreek": (HOTPOTQA_DEV, "5ae28c0a554299495565daaa",
                  "What is the length of the river into which Pack Creek runs after it goes through the Spanish Valley?"),
}


def _d(key: str, text: str) -> Demo:
    source_file, source_id, question = _SOURCES[key]
    return Demo(text, source_file, source_id, question)


EXAMPLES: dict[str, list[Demo]] = {
    "search": [
        _d("haymo", """Retrieved Knowledge:
Wikipedia Passages:
[1] Haymo of Faversham | Haymo of Faversham (died about 1243) was an English Franciscan scholar who lectured at the University of Paris and was praised as the most Aristotelian of the Aristotelians.

Question: Who was Haymo of Faversham?
Answer: Passage [1] describes a single person of this name, the English Franciscan scholar. So the answer is: (1) Paraphrase Answer: Haymo of Faversham was an English Franciscan scholar of the 13th century; (2) Answer List: ["Haymo of Faversham"]"""),
        _d("toad", """Retrieved Knowledge:
Wikipedia Passages:
[1] Toad Hall (ANU) | Toad Hall, opened in 1974, is a residential hall of the Australian National University for postgraduate and mature-age students.
[2] Toad Hall | Toad Hall is the grand house of Mr. Toad in Kenneth Grahame's novel The Wind in the Willows.

Question: Which university has the residential hall Toad Hall? (residential hall of an Australian university)
Answer: Passage [1] is the residential hall meant; passage [2] is a house in a novel. So the answer is: (1) Paraphrase Answer: Toad Hall is the residential hall of the Australian National University; (2) Answer List: ["Australian National University"]"""),
        _d("leland", """Retrieved Knowledge:
Wikipedia Passages:
[1] Leland, North Carolina | Leland is a town in Brunswick County, North Carolina. Films shot in or near it include Maximum Overdrive (1986), Domestic Disturbance (2001) and We're the Millers (2013).

Question: Which film was shot in or around Leland, North Carolina in 1986? (1986 film)
Answer: Of the films passage [1] names, only Maximum Overdrive is from 1986. So the answer is: (1) Paraphrase Answer: The 1986 film shot around Leland, North Carolina is Maximum Overdrive; (2) Answer List: ["Maximum Overdrive"]"""),
        _d("hexum", """Retrieved Knowledge:
Wikipedia Passages:
[1] Mark King (musician) | Mark King (born 1958) is an English musician, singer and bassist of the band Level 42.
[2] Mark King (snooker player) | Mark King is an English professional snooker player.
[3] Nick Hexum | Nicholas Lofton Hexum (born 1970) is an American singer and guitarist of the rock band 311.

Question: Who are the singers Mark King and Nick Hexum? (singer)
Answer: The singer Mark King is the musician of passage [1], not the snooker player of passage [2]; passage [3] is Nick Hexum. So the answer is: (1) Paraphrase Answer: The singers are Mark King of Level 42 and Nick Hexum of 311; (2) Answer List: ["Mark King (musician)", "Nick Hexum"]"""),
    ],
    "relate": [
        _d("haymo", """Retrieved Knowledge:
Wikipedia Passages:
[1] Recovery of Aristotle | The Recovery of Aristotle was the copying and re-translating of most of Aristotle's books from Greek or Arabic into Latin in the Latin West, from the mid-12th into the 13th century.

Question: What language were books being translated into during the Recovery of Aristotle?
Answer: Passage [1] says the books were translated into Latin. So the answer is: (1) Paraphrase Answer: During the Recovery of Aristotle books were translated into Latin; (2) Answer List: ["Latin"]"""),
        _d("nolan", """Retrieved Knowledge:
Wikipedia Passages:
[1] Sathish Kalathil | Sathish Kalathil is an Indian film and documentary director and producer working in Malayalam cinema; he also writes stories and lyrics.

Question: What is the occupation of Sathish Kalathil?
Answer: Passage [1] lists his occupations. So the answer is: (1) Paraphrase Answer: Sathish Kalathil is a film director, documentary director and producer; (2) Answer List: ["film director", "documentary director", "producer"]"""),
        _d("exies", """Retrieved Knowledge:
Wikipedia Passages:
[1] Circus Diablo | Circus Diablo is an American rock band founded in early 2006 by Billy Morrison, Billy Duffy and Ricky Warwick.

Question: When was Circus Diablo formed?
Answer: Passage [1] gives early 2006. So the answer is: (1) Paraphrase Answer: Circus Diablo was formed in 2006; (2) Answer List: ["2006"]"""),
        _d("saxby", """Retrieved Knowledge:
Wikipedia Passages:
[1] Kerry Saxby-Junna | Kerry Saxby-Junna (born 1961) is a retired Australian race walker. She was born in Young, New South Wales, and grew up in Ballina.

Question: In which city was Kerry Saxby-Junna born?
Answer: Passage [1] says she was born in Young; Ballina is where she grew up. So the answer is: (1) Paraphrase Answer: Kerry Saxby-Junna was born in Young, New South Wales; (2) Answer List: ["Young, New South Wales"]"""),
        _d("leland", """Retrieved Knowledge:
Wikipedia Passages:
[1] Maximum Overdrive | Maximum Overdrive is a 1986 American horror comedy written and directed by Stephen King, starring Emilio Estevez.

Question: Who directed Maximum Overdrive?
Answer: Passage [1] names Stephen King as writer and director. So the answer is: (1) Paraphrase Answer: Maximum Overdrive was directed by Stephen King; (2) Answer List: ["Stephen King"]"""),
        _d("krilanovich", """Retrieved Knowledge:
Wikipedia Passages:
[1] Two Dollar Radio | Two Dollar Radio is an independent family-run publisher of literary fiction in Columbus, Ohio, founded in 2005.

Question: Where is Two Dollar Radio based?
Answer: Passage [1] places the publisher in Columbus, Ohio. So the answer is: (1) Paraphrase Answer: Two Dollar Radio is based in Columbus, Ohio; (2) Answer List: ["Columbus, Ohio"]"""),
        _d("sulli", """Retrieved Knowledge:
Wikipedia Passages:
[1] Welcome to the Show (TV series) | Welcome to the Show was a 2011 South Korean sitcom on SBS starring Im Seulong, Sulli, Nichkhun, Kim Jang-hoon and Kim Kwang-kyu.

Question: Who performed in Welcome to the Show?
Answer: Passage [1] lists the whole cast. So the answer is: (1) Paraphrase Answer: Welcome to the Show starred Im Seulong, Sulli, Nichkhun, Kim Jang-hoon and Kim Kwang-kyu; (2) Answer List: ["Im Seulong", "Sulli", "Nichkhun", "Kim Jang-hoon", "Kim Kwang-kyu"]"""),
    ],
    "filter": [
        _d("hexum", """Retrieved Knowledge:
Wikipedia Passages:
[1] Nick Hexum | Nicholas Lofton Hexum is an American singer and guitarist, the vocalist of 311.
[2] Mark King (musician) | Mark King is an English singer and bassist.

Condition: American
Question: Who among Mark King (musician), Nick Hexum is American? (Filter condition: American)
Answer: Passage [1] says Nick Hexum is American; passage [2] says Mark King is English. So the answer is: (1) Paraphrase Answer: The American is Nick Hexum; (2) Answer List: ["Nick Hexum"]"""),
        _d("sulli", """Retrieved Knowledge:
Wikipedia Passages:
[1] Sulli | Choi Jin-ri, known as Sulli, was a South Korean actress and singer, a former member of the girl group f(x).
[2] Nichkhun | Nichkhun is a Thai-American singer of the boy band 2PM.

Condition: member of the band f(x)
Question: Who among Im Seulong, Sulli, Nichkhun, Kim Jang-hoon, Kim Kwang-kyu was a member of the band f(x)? (Filter condition: member of the band f(x))
Answer: Only passage [1] ties a candidate to f(x). So the answer is: (1) Paraphrase Answer: Sulli was a member of the band f(x); (2) Answer List: ["Sulli"]"""),
        _d("leland", """Retrieved Knowledge:
Wikipedia Passages:
[1] Leland, North Carolina | Films shot around Leland include Maximum Overdrive (1986), Domestic Disturbance (2001) and We're the Millers (2013).

Condition: released in 1986
Question: Which among Maximum Overdrive, Domestic Disturbance, We're the Millers was released in 1986? (Filter condition: released in 1986)
Answer: Passage [1] dates Maximum Overdrive to 1986 and the others later. So the answer is: (1) Paraphrase Answer: Maximum Overdrive was released in 1986; (2) Answer List: ["Maximum Overdrive"]"""),
    ],
    "child_reasoning": [
        _d("haymo", """Child questions and answers:
Q: 1. Who was Haymo of Faversham? A: ["Haymo of Faversham"]
Q: 2. During which era did [1] live? A: Haymo of Faversham lived during the Recovery of Aristotle. ["Recovery of Aristotle"]
Q: 3. What language were books being translated into during [2]? A: Books were translated into Latin then. ["Latin"]

Question: What language were books being translated into during the era of Haymo of Faversham?
Answer: Haymo lived during the Recovery of Aristotle, when books were translated into Latin. So the answer is: (1) Paraphrase Answer: During Haymo of Faversham's era books were translated into Latin; (2) Answer List: ["Latin"]"""),
        _d("saxby", """Child questions and answers:
Q: 1. In which city was Kerry Saxby-Junna born? A: ["Young, New South Wales"]
Q: 2. What was the population of [1] at the 2011 census? A: Young had 6,960 people at the 2011 census. ["6,960"]

Question: At the 2011 census, what was he population of the city where Kerry Saxby-Junna was born?
Answer: She was born in Young, which had 6,960 people in 2011. So the answer is: (1) Paraphrase Answer: The city where Kerry Saxby-Junna was born had a population of 6,960 in 2011; (2) Answer List: ["6,960"]"""),
        _d("krilanovich", """Child questions and answers:
Q: 1. What was Grace Krilanovich's first novel? A: ["The Orange Eats Creeps"]
Q: 2. Which publishing house published [1]? A: The Orange Eats Creeps was published by Two Dollar Radio. ["Two Dollar Radio"]
Q: 3. Where is [2] based? A: []

Question: Grace Krilanovich's first novel was published by an independent mom-and-pop publishing house that was founded in 2005, and is based where?
Answer: The publisher is Two Dollar Radio; question 3 found nothing, but I know Two Dollar Radio is based in Columbus, Ohio. So the answer is: (1) Paraphrase Answer: The publisher of her first novel is based in Columbus, Ohio; (2) Answer List: ["Columbus, Ohio"]"""),
        _d("weizman", """Child questions and answers:
Q: 1. Who resigned as the president of Israel before the Israeli presidential election, 2000? A: ["Ezer Weizman"]
Q: 2. In what year was [1] born? A: Ezer Weizman was born on 15 June 1924. ["15 June 1924"]

Question: In what year was the man that resigned as the president of Israel before the Israeli presidential election, 2000 born?
Answer: Ezer Weizman resigned before the 2000 election and was born on 15 June 1924; the question asks for the year. So the answer is: (1) Paraphrase Answer: The president who resigned, Ezer Weizman, was born in 1924; (2) Answer List: ["1924"]"""),
        _d("toad", """Child questions and answers:
Q: 1. Which university has the residential hall Toad Hall? A: ["Australian National University"]
Q: 2. In what Australian city is [1] located? A: The Australian National University is in Canberra. ["Canberra"]

Question: Toad Hall is a residential hall in a university located in what Australian city?
Answer: Toad Hall belongs to the Australian National University, which is in Canberra. So the answer is: (1) Paraphrase Answer: The university of Toad Hall is in Canberra; (2) Answer List: ["Canberra"]"""),
        _d("packcreek", """Child questions and answers:
Q: 1. Into which river does Pack Creek run after the Spanish Valley? A: ["Colorado River"]
Q: 2. What is the length of [1]? A: []

Question: What is the length of the river into which Pack Creek runs after it goes through the Spanish Valley?
Answer: Pack Creek runs into the Colorado River; question 2 found no length, but the Colorado River is about 1,450 miles long. So the answer is: (1) Paraphrase Answer: The Colorado River, into which Pack Creek runs, is about 1,450 miles long; (2) Answer List: ["1,450 miles"]"""),
    ],
    "sibling_reasoning": [
        _d("nolan", """Referenced questions and answers:
Q: 1. What is the occupation of Christopher Nolan? A: ["film director", "producer", "screenwriter"]
Q: 2. What is the occupation of Sathish Kalathil? A: ["film director", "documentary director", "producer"]

Question: Given [1] and [2], are both of them film directors?
Answer: Both lists include film director. So the answer is: (1) Paraphrase Answer: Yes, Christopher Nolan and Sathish Kalathil are both film directors; (2) Answer List: ["yes"]"""),
        _d("exies", """Referenced questions and answers:
Q: 1. When was The Exies formed? A: ["1997"]
Q: 2. When was Circus Diablo formed? A: ["2006"]

Question: Given [1] and [2], which band was formed first, The Exies or Circus Diablo?
Answer: 1997 is earlier than 2006. So the answer is: (1) Paraphrase Answer: The Exies were formed first; (2) Answer List: ["The Exies"]"""),
        _d("airports", """Referenced questions and answers:
Q: 1. In which state is Watertown International Airport? A: ["New York"]
Q: 2. In which state is Alexandria International Airport? A: ["Louisiana"]

Question: Given [1] and [2], are both airports in the same state?
Answer: New York and Louisiana are different states. So the answer is: (1) Paraphrase Answer: No, the two airports are in different states; (2) Answer List: ["no"]"""),
        _d("haig", """Referenced questions and answers:
Q: 1. When was Sid Haig born? A: ["July 14, 1939"]
Q: 2. When was Vic Darchinyan born? A: ["7 January 1976"]

Question: Given [1] and [2], who is the oldest, Sid Haig or Vic Darchinyan?
Answer: Sid Haig was born in 1939, Vic Darchinyan in 1976, so Sid Haig is older. So the answer is: (1) Paraphrase Answer: Sid Haig is the oldest; (2) Answer List: ["Sid Haig"]"""),
        _d("sulli", """Referenced questions and answers:
Q: 1. Who performed in Welcome to the Show? A: ["Im Seulong", "Sulli", "Nichkhun", "Kim Jang-hoon", "Kim Kwang-kyu"]
Q: 2. Who are the members of the band f(x)? A: ["Victoria Song", "Amber Liu", "Luna", "Sulli", "Krystal Jung"]

Question: Given [1] and [2], who appears in both?
Answer: Sulli is in both lists; her real name is Choi Jin-ri. So the answer is: (1) Paraphrase Answer: Choi Jin-ri (Sulli) performed in Welcome to the Show and in f(x); (2) Answer List: ["Choi Jin-ri"]"""),
        _d("pterocarya", """Referenced questions and answers:
Q: 1. How large does the Pterocarya grow? A: Pterocarya are trees of the walnut family. ["trees"]
Q: 2. How large does the Cotula grow? A: Cotula are small low herbs. ["small herbs"]

Question: Given [1] and [2], which plant is larger, the Pterocarya or the Cotula?
Answer: Trees are far larger than small herbs. So the answer is: (1) Paraphrase Answer: The Pterocarya is larger than the Cotula; (2) Answer List: ["Pterocarya"]"""),
    ],
    "direct_rag": [
        _d("leland", """Retrieved Knowledge:
Wikipedia Passages:
[1] Leland, North Carolina | Films shot in or around Leland include Maximum Overdrive (1986) and We're the Millers (2013).
[2] Maximum Overdrive | Maximum Overdrive is a 1986 horror comedy written and directed by Stephen King.

Question: Who directed the film that was shot in or around Leland, North Carolina in 1986
Answer: Passage [1] gives Maximum Overdrive as the 1986 film and passage [2] names its director. So the answer is: (1) Paraphrase Answer: The 1986 film shot around Leland was directed by Stephen King; (2) Answer List: ["Stephen King"]"""),
        _d("krilanovich", """Retrieved Knowledge:
Wikipedia Passages:
[1] Grace Krilanovich | Grace Krilanovich (born 1979) is an American author; her first novel, The Orange Eats Creeps, came out from Two Dollar Radio in 2010.
[2] Two Dollar Radio | Two Dollar Radio, founded in 2005, is an independent family-run publisher in Columbus, Ohio.

Question: Grace Krilanovich's first novel was published by an independent mom-and-pop publishing house that was founded in 2005, and is based where?
Answer: Passage [1] names the publisher and passage [2] its city. So the answer is: (1) Paraphrase Answer: The publisher of Grace Krilanovich's first novel is based in Columbus, Ohio; (2) Answer List: ["Columbus, Ohio"]"""),
        _d("toad", """Retrieved Knowledge:
Wikipedia Passages:
[1] Toad Hall (ANU) | Toad Hall is a residential hall of the Australian National University, opened in 1974.

Question: Toad Hall is a residential hall in a university located in what Australian city?
Answer: Passage [1] names the Australian National University but not its city; I know it is in Canberra. So the answer is: (1) Paraphrase Answer: Toad Hall's university is located in Canberra; (2) Answer List: ["Canberra"]"""),
        _d("weizman", """Retrieved Knowledge:
Wikipedia Passages:
[1] Israeli presidential election, 2000 | The Knesset elected a president on 31 July 2000 after Ezer Weizman resigned; Moshe Katsav defeated Shimon Peres.
[2] Ezer Weizman | Ezer Weizman (15 June 1924 - 24 April 2005) was the seventh President of Israel.

Question: In what year was the man that resigned as the president of Israel before the Israeli presidential election, 2000 born?
Answer: Passage [1] says Ezer Weizman resigned, and passage [2] gives his birth in 1924. So the answer is: (1) Paraphrase Answer: The president who resigned before the 2000 election was born in 1924; (2) Answer List: ["1924"]"""),
        _d("hexum", """Retrieved Knowledge:
Wikipedia Passages:
[1] Mark King (musician) | Mark King is an English singer and bassist, the frontman of Level 42.
[2] Nick Hexum | Nicholas Lofton Hexum is an American singer and the vocalist of 311.

Question: Which singer is American, Mark King or Nick Hexum?
Answer: Passage [2] says Nick Hexum is American; Mark King is English. So the answer is: (1) Paraphrase Answer: The American singer is Nicholas Lofton Hexum; (2) Answer List: ["Nicholas Lofton Hexum"]"""),
    ],
    "closed_book": [
        _d("packcreek", """Question: What is the length of the river into which Pack Creek runs after it goes through the Spanish Valley?
Answer: Pack Creek flows through the Spanish Valley near Moab, Utah, into the Colorado River, which is about 1,450 miles long. So the answer is: (1) Paraphrase Answer: The river Pack Creek runs into, the Colorado River, is about 1,450 miles long; (2) Answer List: ["1,450 miles"]"""),
        _d("nolan", """Question: Are Christopher Nolan and Sathish Kalathil both film directors?
Answer: Christopher Nolan directs films, and Sathish Kalathil is an Indian film and documentary director. So the answer is: (1) Paraphrase Answer: Yes, both are film directors; (2) Answer List: ["yes"]"""),
        _d("exies", """Question: Which band was formed first The Exies or Circus Diablo ?
Answer: The Exies formed in Los Angeles in 1997; Circus Diablo formed in 2006. So the answer is: (1) Paraphrase Answer: The Exies were formed first; (2) Answer List: ["The Exies"]"""),
        _d("haig", """Question: Who is the oldest, Sid Haig or Vic Darchinyan?
Answer: The actor Sid Haig was born in 1939 and the boxer Vic Darchinyan in 1976. So the answer is: (1) Paraphrase Answer: Sid Haig is the oldest; (2) Answer List: ["Sid Haig"]"""),
    ],
}
