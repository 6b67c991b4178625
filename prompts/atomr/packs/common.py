"""Operator and reasoning demonstrations of the ``general`` pack (:data:`EXAMPLES`), and
:class:`Demo`, one dataset pack's stage demonstration with its recorded source."""

from __future__ import annotations

from dataclasses import dataclass

# the train/dev files of ../shared/data that dataset packs take their demonstrations from
HOTPOTQA_DEV = "atomr/questions/single_source/HotpotQA/hotpotqa_dev_100.jsonl"
HOTPOTQA_TRAIN = "hipporag/hotpotqa_train.json"
TWOWIKI_DEV = "atomr/questions/single_source/2WikiMultiHop/2wiki_dev_100.jsonl"
MUSIQUE_DEV = "atomr/questions/single_source/Musique/musique_dev_100.jsonl"
MUSIQUE_TRAIN = "hipporag/musique_train.json"


@dataclass(frozen=True)
class Demo:
    """One stage demonstration of a dataset pack: ``text`` is the human turn and the reply as
    the prompt shows them; it was written on the dataset question ``question``, found in
    ``source_file`` (relative to ../shared/data) under ``source_id``. An operator or reasoning
    demonstration may ask one step of that question (its sub-question); the whole question is
    what an evaluation split leaves out."""

    text: str
    source_file: str
    source_id: str
    question: str

    @property
    def source(self) -> str:
        return f"{self.source_file}#{self.source_id}"


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
Q: 1. In which city was Kerry Saxby-Junna born? A: ["Young, New South Wales"]
Q: 2. What was the population of [1] at the 2011 census? A: Young had 6,960 people at the 2011 census. ["6,960"]

Question: At the 2011 census, what was the population of the city where Kerry Saxby-Junna was born?
Answer: She was born in Young, New South Wales, whose 2011 population was 6,960. So the answer is: (1) Paraphrase Answer: The city where Kerry Saxby-Junna was born had 6,960 people in 2011; (2) Answer List: ["6,960"]""",
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
Answer: Sid Haig was born in 1939; Vic Darchinyan is a boxer born in 1976. So the answer is: (1) Paraphrase Answer: Sid Haig is older than Vic Darchinyan; (2) Answer List: ["Sid Haig"]""",
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
