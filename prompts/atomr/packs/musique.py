"""The MuSiQue pack: planner demonstrations (chains of two to four hops) and answer rules."""

from __future__ import annotations


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


RULES = (
    "Dataset rules (MuSiQue): answer with a short span: a name, a date, a place or a number, as written in "
    "the passages; no explanation in the Answer List."
)
