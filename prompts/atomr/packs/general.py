"""The general pack: one planner demonstration per question shape."""

from __future__ import annotations


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


RULES = ""
