"""The MuSiQue pack: planner demonstrations (chains of two to four hops) and answer rules."""

from __future__ import annotations

from atomgraph.prompts.atomr.packs.common import MUSIQUE_DEV, Demo


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
    ("Where does the body of water by the city home to the Juicy Lucy and the Ohio River meet?", {
        "Where does the body of water by the city home to the Juicy Lucy and the Ohio River meet?": [
            "1. Which city is home to the Juicy Lucy?", "2. Which body of water is by [1]?",
            "3. Where do [2] and the Ohio River meet?"],
        "1. Which city is home to the Juicy Lucy?": 'Relate("Juicy Lucy", "place of origin")',
        "2. Which body of water is by [1]?": 'Relate([1], "located next to body of water")',
        "3. Where do [2] and the Ohio River meet?": 'Relate([2], "confluence with the Ohio River")',
    }),
    ("The capital of the state where Mary Boykin Chesnut lived borders a city within which county?", {
        "The capital of the state where Mary Boykin Chesnut lived borders a city within which county?": [
            "1. In which state did Mary Boykin Chesnut live?", "2. What is the capital of [1]?",
            "3. Which city borders [2]?", "4. Within which county is [3]?"],
        "1. In which state did Mary Boykin Chesnut live?": 'Relate("Mary Boykin Chesnut", "state of residence")',
        "2. What is the capital of [1]?": 'Relate([1], "capital")',
        "3. Which city borders [2]?": 'Relate([2], "shares border with")',
        "4. Within which county is [3]?": 'Relate([3], "county")',
    }),
    ("What is the busiest airport in the city where Marcel Bich died?", {
        "What is the busiest airport in the city where Marcel Bich died?": [
            "1. In which city did Marcel Bich die?", "2. What is the busiest airport in [1]?"],
        "1. In which city did Marcel Bich die?": 'Relate("Marcel Bich", "place of death")',
        "2. What is the busiest airport in [1]?": 'Relate([1], "busiest airport")',
    }),
    ("What institute did the actor playing the voice of John Smith in Pocahontas attend?", {
        "What institute did the actor playing the voice of John Smith in Pocahontas attend?": [
            "1. What is Pocahontas?", "2. Who voices John Smith in [1]?", "3. What institute did [2] attend?"],
        "1. What is Pocahontas?": 'Search("Pocahontas", "animated film")',
        "2. Who voices John Smith in [1]?": 'Relate([1], "voice actor of John Smith")',
        "3. What institute did [2] attend?": 'Relate([2], "educated at")',
    }),
    ("What is the abbreviated form of the name of the country where Alfred Kurella hails from?", {
        "What is the abbreviated form of the name of the country where Alfred Kurella hails from?": [
            "1. Which country does Alfred Kurella hail from?", "2. What is the abbreviated form of the name of [1]?"],
        "1. Which country does Alfred Kurella hail from?": 'Relate("Alfred Kurella", "country of citizenship")',
        "2. What is the abbreviated form of the name of [1]?": 'Relate([1], "short name")',
    }),
]


RULES = (
    "Dataset rules (MuSiQue): answer with a short span: a name, a date, a place or a number, as written in "
    "the passages; no explanation in the Answer List."
)


# --- stage demonstrations -------------------------------------------------------------------------
# The authors' MuSiQue prompts hold 5 Search, 7 Relate, 3 Filter, 3 child/[DR] reasoning (one prompt
# for both), 5 direct-RAG and 4 closed-book demonstrations; ours have the same counts, written on the
# planner's questions above (musique_dev_100, passages in our words), so the stages add no question to
# leave out.
_SOURCES = {
    "peel": ("2hop__25396_593388", "Who was the father of the person who issued the Tamworth manifesto?"),
    "coldturkey": ("2hop__152027_141308", "What is the parent company of the record label releasing Cold Turkey?"),
    "alexander": ("2hop__35173_17335",
                  "When did the person who ended the Archaemenid Empire by conquest in 330 BC die?"),
    "smokey": ("2hop__84172_198548", "Who is the spouse of the person who does the voice for Smokey the Bear?"),
    "harris": ("2hop__256778_131879", "Which is the body of water by the birthplace of Christopher Harris?"),
    "blindgirl": ("2hop__540035_113442", "What date did the creator of The Blind Girl Die?"),
    "jujhar": ("2hop__124932_278133", "Who was the father of Jujhar Singh's father?"),
    "tarhan": ("2hop__502473_634689", "Mehmet Hayri Tarhan's birthplace is the capital of what municipality?"),
    "woca": ("2hop__128608_82341", "The city where WOCA is located is in which part of Florida?"),
    "peppard": ("2hop__51965_165532", "Who is the spouse of the actor who plays Paul in Breakfast at Tiffany's?"),
}


def _d(key: str, text: str) -> Demo:
    source_id, question = _SOURCES[key]
    return Demo(text, MUSIQUE_DEV, source_id, question)


EXAMPLES: dict[str, list[Demo]] = {
    "search": [
        _d("coldturkey", """Retrieved Knowledge:
Wikipedia Passages:
[1] Cold Turkey | Cold Turkey is a 1969 song by John Lennon, issued as a single by the Plastic Ono Band.
[2] Cold turkey | Quitting cold turkey means stopping an addictive drug abruptly rather than gradually.

Question: What is Cold Turkey? (song)
Answer: The song is passage [1]; passage [2] is the expression. So the answer is: (1) Paraphrase Answer: Cold Turkey is John Lennon's 1969 song; (2) Answer List: ["Cold Turkey (song)"]"""),
        _d("blindgirl", """Retrieved Knowledge:
Wikipedia Passages:
[1] The Blind Girl (painting) | The Blind Girl is an 1856 oil painting by the English artist John Everett Millais.
[2] The Blind Girl of Castèl-Cuillè | The Blind Girl of Castèl-Cuillè is a poem by Jacques Jasmin, put into English by Henry Wadsworth Longfellow.

Question: What is The Blind Girl? (painting)
Answer: The painting is passage [1]; passage [2] is a poem. So the answer is: (1) Paraphrase Answer: The Blind Girl is the 1856 painting by John Everett Millais; (2) Answer List: ["The Blind Girl (painting)"]"""),
        _d("woca", """Retrieved Knowledge:
Wikipedia Passages:
[1] WOCA | WOCA is an AM radio station licensed to Ocala, Florida.

Question: What is WOCA? (radio station in Florida)
Answer: Passage [1] describes the Florida radio station. So the answer is: (1) Paraphrase Answer: WOCA is an AM radio station of Ocala, Florida; (2) Answer List: ["WOCA"]"""),
        _d("jujhar", """Retrieved Knowledge:
Wikipedia Passages:
[1] Jujhar Singh | Sahibzada Jujhar Singh (1691 - 1704) was the second son of Guru Gobind Singh; he fell at the Battle of Chamkaur.
[2] Jujhar Singh Bundela | Jujhar Singh Bundela was a 17th-century Rajput ruler of Orchha.

Question: Who is Jujhar Singh? (son of a Sikh Guru)
Answer: The son of the Sikh Guru is passage [1]; passage [2] is a ruler of Orchha. So the answer is: (1) Paraphrase Answer: Jujhar Singh is the second son of Guru Gobind Singh; (2) Answer List: ["Jujhar Singh"]"""),
        _d("alexander", """Retrieved Knowledge:
Wikipedia Passages:
[1] Achaemenid Empire | The Achaemenid Empire was the Persian empire founded by Cyrus the Great; Alexander the Great conquered it in 330 BC.

Question: What is the Achaemenid Empire? (Persian empire)
Answer: Passage [1] describes the empire. So the answer is: (1) Paraphrase Answer: The Achaemenid Empire is the Persian empire founded by Cyrus the Great; (2) Answer List: ["Achaemenid Empire"]"""),
    ],
    "relate": [
        _d("peel", """Retrieved Knowledge:
Wikipedia Passages:
[1] Tamworth Manifesto | The Tamworth Manifesto was a statement of policy issued by Robert Peel in 1834 at Tamworth, often seen as the founding text of the Conservative Party.

Question: Who issued the Tamworth manifesto?
Answer: Passage [1] says Robert Peel issued it. So the answer is: (1) Paraphrase Answer: The Tamworth manifesto was issued by Robert Peel; (2) Answer List: ["Robert Peel"]"""),
        _d("peel", """Retrieved Knowledge:
Wikipedia Passages:
[1] Sir Robert Peel, 1st Baronet | Sir Robert Peel, 1st Baronet, was an English industrialist and politician, father of the Prime Minister Sir Robert Peel.

Question: Who was the father of Robert Peel?
Answer: Passage [1] names the 1st Baronet as the Prime Minister's father. So the answer is: (1) Paraphrase Answer: Robert Peel's father was Sir Robert Peel, 1st Baronet; (2) Answer List: ["Sir Robert Peel, 1st Baronet"]"""),
        _d("coldturkey", """Retrieved Knowledge:
Wikipedia Passages:
[1] Cold Turkey | Cold Turkey was released in October 1969 as a single by the Plastic Ono Band on Apple Records.

Question: Which record label released Cold Turkey (song)?
Answer: Passage [1] names Apple Records. So the answer is: (1) Paraphrase Answer: Cold Turkey was released by Apple Records; (2) Answer List: ["Apple Records"]"""),
        _d("coldturkey", """Retrieved Knowledge:
Wikipedia Passages:
[1] Apple Records | Apple Records is a record label founded by the Beatles in 1968 as a division of Apple Corps.

Question: What is the parent company of Apple Records?
Answer: Passage [1] says the label is a division of Apple Corps. So the answer is: (1) Paraphrase Answer: The parent company of Apple Records is Apple Corps; (2) Answer List: ["Apple Corps"]"""),
        _d("smokey", """Retrieved Knowledge:
Wikipedia Passages:
[1] Smokey Bear | Smokey Bear is the mascot of the US Forest Service's wildfire prevention campaign; since 2008 the actor Sam Elliott has voiced him.

Question: Who does the voice for Smokey the Bear?
Answer: Passage [1] names Sam Elliott. So the answer is: (1) Paraphrase Answer: Smokey the Bear is voiced by Sam Elliott; (2) Answer List: ["Sam Elliott"]"""),
        _d("blindgirl", """Retrieved Knowledge:
Wikipedia Passages:
[1] John Everett Millais | Sir John Everett Millais (8 June 1829 - 13 August 1896) was an English painter, a founder of the Pre-Raphaelite Brotherhood.

Question: On what date did John Everett Millais die?
Answer: Passage [1] gives the date. So the answer is: (1) Paraphrase Answer: John Everett Millais died on 13 August 1896; (2) Answer List: ["13 August 1896"]"""),
        _d("tarhan", """Retrieved Knowledge:
Wikipedia Passages:
[1] Malko Tarnovo | Malko Tarnovo is a town in Burgas Province, Bulgaria, near the Turkish border.

Question: Where was Mehmet Hayri Tarhan born?
Answer: The passage describes a town but says nothing about Mehmet Hayri Tarhan, and I do not know where he was born. So the answer is: (1) Paraphrase Answer: Unknown; (2) Answer List: []"""),
    ],
    "filter": [
        _d("peppard", """Retrieved Knowledge:
Wikipedia Passages:
[1] George Peppard | George Peppard was married five times: to Helen Davies, Elizabeth Ashley, Sherry Boucher, Alexis Adams and Laura Taylor.
[2] Patricia Neal | Patricia Neal played in Breakfast at Tiffany's and was married to Roald Dahl.

Condition: married to George Peppard
Question: Who among Helen Davies, Audrey Hepburn, Sherry Boucher, Patricia Neal was married to George Peppard? (Filter condition: married to George Peppard)
Answer: Passage [1] lists Helen Davies and Sherry Boucher among his wives; Patricia Neal married Roald Dahl, and Audrey Hepburn was only his co-star. So the answer is: (1) Paraphrase Answer: Helen Davies and Sherry Boucher were married to George Peppard; (2) Answer List: ["Helen Davies", "Sherry Boucher"]"""),
        _d("alexander", """Retrieved Knowledge:
Wikipedia Passages:
[1] Darius III | Darius III was the last king of the Achaemenid Empire, defeated by Alexander the Great.
[2] Philip II of Macedon | Philip II, father of Alexander the Great, was assassinated in 336 BC.

Condition: ended the Achaemenid Empire by conquest in 330 BC
Question: Who among Darius III, Alexander the Great, Philip II of Macedon ended the Achaemenid Empire by conquest in 330 BC? (Filter condition: ended the Achaemenid Empire by conquest in 330 BC)
Answer: Passage [1] says Alexander defeated Darius III, and Philip II died in 336 BC. So the answer is: (1) Paraphrase Answer: Alexander the Great ended the Achaemenid Empire by conquest; (2) Answer List: ["Alexander the Great"]"""),
        _d("coldturkey", """Retrieved Knowledge:
Wikipedia Passages:
[1] Apple Records | Apple Records is a division of Apple Corps, founded by the Beatles.
[2] Parlophone | Parlophone is a British label that belonged to EMI for most of its history.

Condition: a division of Apple Corps
Question: Which of Apple Records, Parlophone, Capitol Records is a division of Apple Corps? (Filter condition: a division of Apple Corps)
Answer: Only passage [1] ties a label to Apple Corps; Capitol Records is an American label of other owners. So the answer is: (1) Paraphrase Answer: Apple Records is a division of Apple Corps; (2) Answer List: ["Apple Records"]"""),
    ],
    "child_reasoning": [
        _d("peel", """Child questions and answers:
Q: 1. Who issued the Tamworth manifesto? A: ["Robert Peel"]
Q: 2. Who was the father of [1]? A: Robert Peel's father was Sir Robert Peel, 1st Baronet. ["Sir Robert Peel, 1st Baronet"]

Question: Who was the father of the person who issued the Tamworth manifesto?
Answer: Robert Peel issued the manifesto, and his father was Sir Robert Peel, 1st Baronet. So the answer is: (1) Paraphrase Answer: The father of the man who issued the Tamworth manifesto was Sir Robert Peel, 1st Baronet; (2) Answer List: ["Sir Robert Peel, 1st Baronet"]"""),
        _d("smokey", """Child questions and answers:
Q: 1. Who does the voice for Smokey the Bear? A: ["Sam Elliott"]
Q: 2. Who is the spouse of [1]? A: Sam Elliott is married to Katharine Ross. ["Katharine Ross"]

Question: Who is the spouse of the person who does the voice for Smokey the Bear?
Answer: Sam Elliott voices Smokey, and his wife is Katharine Ross. So the answer is: (1) Paraphrase Answer: The voice of Smokey the Bear, Sam Elliott, is married to Katharine Ross; (2) Answer List: ["Katharine Ross"]"""),
        _d("blindgirl", """Child questions and answers:
Q: 1. Who created The Blind Girl? A: ["John Everett Millais"]
Q: 2. On what date did [1] die? A: []

Question: What date did the creator of The Blind Girl Die?
Answer: The painter is John Everett Millais; question 2 found nothing, but I know he died on 13 August 1896. So the answer is: (1) Paraphrase Answer: The creator of The Blind Girl died on 13 August 1896; (2) Answer List: ["13 August 1896"]"""),
    ],
    "sibling_reasoning": [
        _d("alexander", """Referenced questions and answers:
Q: 1. Who ended the Achaemenid Empire by conquest in 330 BC? A: ["Alexander the Great"]
Q: 2. When did [1] die? A: Alexander the Great died in Babylon on 10 or 11 June 323 BC. ["10 June 323 BC", "11 June 323 BC"]

Question: Given [1] and [2], in which year did [1] die?
Answer: Both dates of question 2 fall in 323 BC. So the answer is: (1) Paraphrase Answer: Alexander the Great died in 323 BC; (2) Answer List: ["323 BC"]"""),
        _d("jujhar", """Referenced questions and answers:
Q: 1. Who was the father of Jujhar Singh? A: ["Guru Gobind Singh"]
Q: 2. Who was the father of [1]? A: Guru Gobind Singh was the son of Guru Tegh Bahadur. ["Guru Tegh Bahadur"]

Question: Given [1] and [2], who was the father of Jujhar Singh's father?
Answer: Jujhar Singh's father is Guru Gobind Singh, whose father is Guru Tegh Bahadur. So the answer is: (1) Paraphrase Answer: The father of Jujhar Singh's father was Guru Tegh Bahadur; (2) Answer List: ["Guru Tegh Bahadur"]"""),
        _d("peppard", """Referenced questions and answers:
Q: 1. Who plays Paul in Breakfast at Tiffany's? A: ["George Peppard"]
Q: 2. Who is the spouse of [1]? A: George Peppard married five times. ["Helen Davies", "Elizabeth Ashley", "Sherry Boucher", "Alexis Adams", "Laura Taylor"]

Question: Given [1] and [2], who is the spouse of the actor who plays Paul in Breakfast at Tiffany's?
Answer: The actor is George Peppard, and question 2 lists his five wives. So the answer is: (1) Paraphrase Answer: George Peppard's spouses were Helen Davies, Elizabeth Ashley, Sherry Boucher, Alexis Adams and Laura Taylor; (2) Answer List: ["Helen Davies", "Elizabeth Ashley", "Sherry Boucher", "Alexis Adams", "Laura Taylor"]"""),
    ],
    "direct_rag": [
        _d("coldturkey", """Retrieved Knowledge:
Wikipedia Passages:
[1] Cold Turkey | Cold Turkey is a 1969 Plastic Ono Band single released on Apple Records.
[2] Apple Records | Apple Records, founded by the Beatles in 1968, is a division of Apple Corps.

Question: What is the parent company of the record label releasing Cold Turkey?
Answer: Passage [1] gives the label and passage [2] its parent. So the answer is: (1) Paraphrase Answer: The label that released Cold Turkey belongs to Apple Corps; (2) Answer List: ["Apple Corps"]"""),
        _d("jujhar", """Retrieved Knowledge:
Wikipedia Passages:
[1] Jujhar Singh | Jujhar Singh was the second son of Guru Gobind Singh.
[2] Guru Gobind Singh | Guru Gobind Singh, the tenth Sikh Guru, was the son of Guru Tegh Bahadur.

Question: Who was the father of Jujhar Singh's father?
Answer: Passage [1] gives Guru Gobind Singh as the father and passage [2] his father. So the answer is: (1) Paraphrase Answer: Jujhar Singh's grandfather was Guru Tegh Bahadur; (2) Answer List: ["Guru Tegh Bahadur"]"""),
        _d("alexander", """Retrieved Knowledge:
Wikipedia Passages:
[1] Achaemenid Empire | Alexander the Great conquered the Achaemenid Empire in 330 BC.
[2] Alexander the Great | Alexander the Great died in Babylon in June 323 BC, aged 32.

Question: When did the person who ended the Archaemenid Empire by conquest in 330 BC die?
Answer: Passage [1] names Alexander the Great and passage [2] gives his death. So the answer is: (1) Paraphrase Answer: The conqueror of the Achaemenid Empire died in 323 BC; (2) Answer List: ["323 BC"]"""),
        _d("woca", """Retrieved Knowledge:
Wikipedia Passages:
[1] WOCA | WOCA is an AM radio station licensed to Ocala, Florida.

Question: The city where WOCA is located is in which part of Florida?
Answer: Passage [1] places WOCA in Ocala; I know Ocala lies in North Central Florida. So the answer is: (1) Paraphrase Answer: Ocala, the city of WOCA, is in North Central Florida; (2) Answer List: ["North Central Florida"]"""),
        _d("harris", """Retrieved Knowledge:
(no knowledge retrieved)

Question: Which is the body of water by the birthplace of Christopher Harris?
Answer: Nothing was retrieved, and many people are called Christopher Harris; I cannot tell which one is meant or where he was born. So the answer is: (1) Paraphrase Answer: Unknown; (2) Answer List: []"""),
    ],
    "closed_book": [
        _d("peel", """Question: Who was the father of the person who issued the Tamworth manifesto?
Answer: Robert Peel issued the Tamworth manifesto in 1834; his father was Sir Robert Peel, 1st Baronet. So the answer is: (1) Paraphrase Answer: His father was Sir Robert Peel, 1st Baronet; (2) Answer List: ["Sir Robert Peel, 1st Baronet"]"""),
        _d("smokey", """Question: Who is the spouse of the person who does the voice for Smokey the Bear?
Answer: Sam Elliott voices Smokey the Bear, and he is married to the actress Katharine Ross. So the answer is: (1) Paraphrase Answer: The voice of Smokey the Bear is married to Katharine Ross; (2) Answer List: ["Katharine Ross"]"""),
        _d("blindgirl", """Question: What date did the creator of The Blind Girl Die?
Answer: The Blind Girl was painted by John Everett Millais, who died on 13 August 1896. So the answer is: (1) Paraphrase Answer: The creator of The Blind Girl died on 13 August 1896; (2) Answer List: ["13 August 1896"]"""),
        _d("jujhar", """Question: Who was the father of Jujhar Singh's father?
Answer: Jujhar Singh was a son of Guru Gobind Singh, whose father was Guru Tegh Bahadur. So the answer is: (1) Paraphrase Answer: The father of Jujhar Singh's father was Guru Tegh Bahadur; (2) Answer List: ["Guru Tegh Bahadur"]"""),
    ],
}
