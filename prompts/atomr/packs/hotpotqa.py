"""The HotpotQA pack: planner demonstrations (bridge, comparison, Filter, intersection) and answer rules."""

from __future__ import annotations


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


RULES = (
    "Dataset rules (HotpotQA): answer with the shortest span an encyclopedia would use: the full name of a "
    "person, work, organisation or place, a year or a date as written, a number with its unit. "
    'Answer a yes/no question with ["yes"] or ["no"].'
)
