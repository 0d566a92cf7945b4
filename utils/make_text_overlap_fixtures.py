#!/usr/bin/env python3
"""Writes tests/data/text_overlap/pairs.jsonl and porter.tsv, the reference packages' answers for
tests/train/test_text_overlap.cpp.

pairs.jsonl: 400 prediction/reference pairs with
  rouge1, rouge2, rougeL, rougeLsum   rouge-score's RougeScorer (use_stemmer=False) F-measures
  rouge1_stem ... rougeLsum_stem      the same with use_stemmer=True (NLTK's PorterStemmer)
  bleu                                sacrebleu's corpus_bleu([prediction], [[reference]]).score
then 60 lines with several references ({"prediction", "references", ...}: score_multi's best
F-measures and sacrebleu with every reference), then 150 pairs and 30 lines with several
references built for stemming (same keys), and one last line {"corpus_bleu": ...}: corpus_bleu
over the first 400 pairs (13a, exp smoothing).
The first 460 lines are seeded random text built to reach the rules' corners: shared and
reordered words, numbers with points, commas and dashes, HTML entities, <skipped>,
hyphenated line ends, newline-separated sentences (ROUGE-Lsum), empty strings, punctuation
runs, non-ASCII letters (including U+0130 and U+212A, whose lowercase holds ASCII), CJK, emoji,
Unicode spaces. The stemming lines (drawn from a second seeded Random, so the first 460 stay as
they were) use families of inflected words whose forms share a stem or just miss one: plurals,
-ed, -ing, -ational, -ness, -ly, y -> i, double consonants, words of 3 and 4 characters (only
longer tokens are stemmed), words with digits, NLTK's irregular forms, mixed case.

porter.tsv: word<TAB>NLTK PorterStemmer().stem(word) (NLTK_EXTENSIONS) for every token of the
pairs and a deterministic list of English words and suffix combinations covering every rule.

usage: /opt/ref-text/bin/python utils/make_text_overlap_fixtures.py [OUTPUT_DIR]
       (a venv with rouge-score==0.1.2 sacrebleu==2.4.3 nltk==3.10.4)
"""
import json
import pathlib
import random
import sys

import sacrebleu
from nltk.stem.porter import PorterStemmer
from rouge_score import rouge_scorer, tokenize

WORDS = ("the cat sat on mat a dog ran fast model data loss step token rank node "
         "Paris London 1990 3.14 1,000 e-mail state-of-the-art don't it's U.S. Dr. "
         "café naïve Straße İstanbul Kelvin ΚΑΛΗ Ωmega 東京 データ 😀 x2 GPT-2").split()
PIECES = [",", ".", "!", "?", ";", ":", "(", ")", "\"", "'", "-", "--", "...", "&amp;", "&lt;b&gt;", "&quot;",
          "<skipped>", "5-4", "10.5", "3,2", "a.b", "$", "%", "#1", "\u00a0", "\u2028", "\u3000", "\t", "K"]

# Families of forms that share a Porter stem, or come close to one: the stemming pairs swap a
# word for another of its family. Every rule's suffixes, y -> i, double consonants, words of
# 3 and 4 characters, words with digits, NLTK's irregular forms.
FAMILIES = [line.split() for line in """
connect connected connecting connection connections connects connective connectivity
run runs running runner runners ran
hop hops hopped hopping hope hoped hoping hopes hopeful hopefully hopefulness hopeless
happy happier happiest happily happiness unhappy
relate related relating relation relational relations relative relatively relativity
generate generated generating generation generational generations generator generators
condition conditional conditionally conditioned conditions conditioning
sensitive sensitivity sensitivities sensitively sensible sensibility sensibilities
formal formality formalities formalize formalized formalizing formally formalism
digit digits digital digitize digitizer digitization digitally
agree agreed agreeing agreement agreements agreeable disagreed
feed feeds feeding fed need needs needed needing bleed bleeding
fly flies flying flier flyer
spy spies spied spying
die dies died dying lie lies lied lying tie ties tied tying
sky skies news inning innings outing outings canning cannings howe
proceed proceeds proceeding proceeded exceed exceeds exceeded succeed succeeds succeeded succeeding
control controls controlled controlling controller controllable roll rolled rolling
fall falls falling fill fills filled filling tall taller
enjoy enjoys enjoyed enjoying enjoyment enjoyable
play plays played playing player players playful playfully playfulness
decide decides decided deciding decision decisions decisive decisively decisiveness
analog analogous analogously analogy analogies analogousli
geology geologic geological geologist geologies theology theologian
biology biological biologically biologist apology apologies apologize
probate probation probable probably probability probabilities
cease ceased ceasing ceases
care cares cared caring careful carefully carefulness careless caress caresses
pony ponies cat cats bed beds bled motor motoring motored
sing sings singing sang song songs
plaster plastered plastering trouble troubled troubling troubles
size sizes sized sizing resize resized
file files filed filing fail fails failed failing
try tries tried trying trial trials
operate operates operator operators operation operational operating
allow allows allowance allowed allowing
infer infers inference inferences inferred
airline airlines airliner airliners
gyroscope gyroscopic adjust adjustable adjustment adjusted
defend defends defensible defense defensive
irritate irritant irritating irritation
replace replaced replacement replacing depend depends dependent dependence dependency
adopt adopted adoption adoptive communism communist commune
activate activated activation active actively activity activities
angular angularity effect effects effective effectively effectiveness
bowdlerize bowdlerized electric electrical electricity electrically electrician
triplicate triplicated callous callousness vietnamization predicate predication
feudal feudalism hesitancy hesitancies valency valencies radical radically radicalli
different differently difference vile vilely conformably conformable rational rationally rationalli
national nationally nationality nationalities nationalize nationalization
fruitful fruitfulness usefulli useful usefulness
model models modeling modelled modelling remodel
train trains trained training trainer trainers
token tokens tokenize tokenized tokenizer tokenizers tokenization
step steps stepped stepping stop stops stopped stopping
loss losses lose loses losing rank ranks ranked ranking
node nodes data dataset datasets
agreed freed fee fees see sees seeing seed seeds
was has its yes bus gas this thus lens ties eyes eggs ring king thing things
yyy yyyy yes yell yelled yelling boy boys toy toys buy buys say says day days
abed ied eed sss mess messes kiss kisses
gpt4s x11ing 3ds mp3s 1990s h100s covid19 b2b v2ing 4ever y2k l33t co2 2nd 3rd 10th 100s a100s
""".strip().splitlines()]


def text(rng, base=None):
    if base is not None and rng.random() < 0.7:  # a variant of the reference: shared words
        words = base.split(" ")
        for _ in range(rng.randint(0, 4)):
            op = rng.random()
            if op < 0.3 and words:
                words.pop(rng.randrange(len(words)))
            elif op < 0.6:
                words.insert(rng.randint(0, len(words)), rng.choice(WORDS))
            elif len(words) > 1:
                i = rng.randrange(len(words) - 1)
                words[i], words[i + 1] = words[i + 1], words[i]
        return " ".join(words)
    if rng.random() < 0.04:
        return ""
    out = []
    for _ in range(rng.randint(1, 30)):
        r = rng.random()
        if r < 0.7:
            out.append(rng.choice(WORDS) + (rng.choice(PIECES) if rng.random() < 0.1 else ""))
        elif r < 0.85:
            out.append(rng.choice(PIECES))
        elif r < 0.95:
            out.append("\n")
        else:
            out.append("-\n")
    sep = rng.choice([" ", " ", " ", "", "  "])
    return sep.join(out) + rng.choice(["", "", " ", "\n", "  \t"])


def family_word(rng, family=None):
    word = rng.choice(family or rng.choice(FAMILIES))
    r = rng.random()
    return word.upper() if r < 0.05 else word.capitalize() if r < 0.15 else word


def stem_text(rng, base=None):
    """Text of family words; with base, a variant whose words often change form within their family."""
    if base is not None:
        words = base.split(" ")
        for i, w in enumerate(words):
            family = next((f for f in FAMILIES if w.lower() in f), None)
            if family and rng.random() < 0.5:
                words[i] = family_word(rng, family)
        for _ in range(rng.randint(0, 3)):
            op = rng.random()
            if op < 0.3 and words:
                words.pop(rng.randrange(len(words)))
            elif op < 0.6:
                words.insert(rng.randint(0, len(words)), family_word(rng))
            elif len(words) > 1:
                i = rng.randrange(len(words) - 1)
                words[i], words[i + 1] = words[i + 1], words[i]
        return " ".join(words)
    out = []
    for _ in range(rng.randint(1, 25)):
        r = rng.random()
        if r < 0.8:
            out.append(family_word(rng))
        elif r < 0.9:
            out.append(rng.choice([",", ".", "!", "-", "'s", "(", ")", "42"]))
        else:
            out.append("\n")
    return " ".join(out)


# Stems of real English words by the rule that takes them, and roots for suffix combinations.
ENGLISH = """
caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated troubled
sized hopping tanned falling hissing fizzed failing filing happy sky relational conditional
rational valenci hesitanci digitizer conformabli radicalli differentli vileli analogousli
vietnamization predication operator feudalism decisiveness hopefulness callousness formaliti
sensitiviti sensibiliti triplicate formative formalize electriciti electrical hopeful goodness
revival allowance inference airliner gyroscopic adjustable defensible irritant replacement
adjustment dependent adoption homologou communism activate angulariti homologous effective
bowdlerize probate rate cease controll roll generalizations oscillators crying mice geese
abatements abilities abnormally absorbency accelerated accommodations accordingly achievements
acknowledgment activities adaptability additionally administratively advertisements aesthetically
affectionately aggravating agreeably allegedly alphabetically ambitiously amusingly analytically
anonymously apologetically appreciatively approximately arbitrarily argumentative artistically
assertiveness astonishingly attentiveness attractively authoritatively automatically
availability beautifully believably beneficially bewildering biologically boastfulness
breathtakingly brilliantly businesses calculations capabilities carelessly categorically
centralization ceremonially characteristically cheerfulness chronologically circumstantial
classifications cleverness collectively commercially communicative comparatively compassionately
competitively complications comprehensively computationally conceptualization confidentially
confrontational congratulations consciousness considerably consistently constitutionally
contemplative contentiousness continuously contradictory controversially conventionally
conversational cooperatively correspondingly courageously creatively criticisms cumulatively
curiously decentralization deceptively decorations defensiveness deliberately democratically
demonstrations dependability descriptively destructiveness deterministically developmental
differentiation diplomatically disappointingly discriminatory distinctiveness dramatically
economically educationally effortlessly electronically emotionally emphatically encouragingly
enthusiastically environmentally equivalently essentially evolutionary exaggeratedly
exceptionally excitability exhaustively experimentally explanations exponentially
expressiveness extraordinarily fabulously faithfulness fashionably feasibility financially
forgetfulness fortunately fundamentally generalizability generously geographically gracefully
grammatically gratefulness harmoniously helpfulness hierarchically historically hopelessness
horizontally hospitality humorously hypothetically identifications illustrations imaginatively
immeasurably immediately implementations impressively inaccurately incidentally incrementally
independently individually industriously inevitably influentially informational ingeniously
initialization innovatively instantaneously institutionalization instructional intellectually
intentionally interactively internationalization interpretations intuitively inventiveness
irrationally irresponsibility jealousness joyfulness judgmental justifiably knowledgeable
laboriously legitimately linguistically logarithmically luxuriously magnificently manipulations
mathematically meaningfulness mechanically methodically meticulousness minimalism
miscommunications modernization momentarily motivational mysteriously naturalization
nervousness neutralization nonetheless normalization notifications numerically objectively
observational obviously occasionally operationally opportunistically optimization
organizationally originality outrageously overwhelmingly painfully parameterization
particularly passionately peacefulness perceptively periodically permissibility perpendicularly
personalization persuasiveness philosophically physically playfulness pleasurably poetically
politically popularity possessiveness powerfully practicality precariously predictability
preferentially preliminary presumably previously problematically productively professionally
proportionally provisionally psychologically purposefully qualifications quantitatively
questionably rationalization readability realistically reasonably recognizably recommendations
reconciliation regionalism regularization relationships relentlessly reliability remarkably
representational resourcefulness respectfully responsibilities restrictiveness revolutionary
rhythmically ridiculousness romantically ruthlessness sarcastically satisfactorily scientifically
seamlessly sensationalism sequentially seriousness significantly simplifications simultaneously
skillfulness sociologically specifically spectacularly spontaneously standardization
statistically strategically structurally subconsciously substantially successfully
sufficiently superficially supposedly suspiciously symbolically sympathetically systematically
technologically temporarily theoretically thoughtfulness tokenization traditionally
transformational tremendously truthfulness unbelievably uncomfortably understandably
unfortunately universally unnecessarily unpredictability usefulness vectorization verbosely
vertically victoriously visualization vulnerability wastefulness whimsically wonderfully
youthfulness zealously
agreement agreements feeds freed needed breed speeding exceeded proceeds succeeded weeded
died lied tied spied fried tried denied applied studied supplied copied carried worried
cries flies skies spies tries dries fries pries babies ladies cities parties bodies
dying lying tying eying saying playing staying buying flying crying trying
begging bidding budding chatting dropping fitting gripping hugging jogging knitting planning
shipping shopping skipping spinning stepping stirring swimming trimming wrapping
falling filling killing rolling selling telling yelling buzzing fizzing missing passing hissing
hoped hoping filed filing rated rating noted noting ruled ruling timed timing
happiness business laziness emptiness readiness easily happily busily lazily merrily
fully really finally totally nearly quickly slowly lonely lovely early only daily
yearly holy ugly silly jolly belly bully
archaeology biology geology philology theology astrology technology apology analogy trilogy
logical logically logician psychological ideological
joy toy boy ploy enjoy employ destroy annoy deploy convey survey obey grey key monkey
syzygy yyyyy ayyy byyy yay yeye eyey
""".split()

ROOTS = ("nat nation relat condition hope happ run cat fly spi sens form digit agre generat "
         "oper electr predic feud decis call forma triplic adjust depend adopt commun activ "
         "angular effect bowdler prob ceas control rol tanner hiss fizz fail fil sky enjoy "
         "play troubl siz conflat plaster motor sing ton tree oat ivy orrery by trouble y yy "
         "ab abl i e o u ee oo x w 7 42 3d").split()
SUFFIXES = ("s es ies ied eed ed ing ings ational tional enci anci izer bli abli alli entli eli "
            "ousli ization ation ator alism iveness fulness ousness aliti iviti biliti fulli logi "
            "icate ative alize iciti ical ful ness al ance ence er ic able ible ant ement ment ent "
            "ion sion tion ou ism ate iti ous ive ize e ll y ly sses ss at bl iz").split()


def stem_vocabulary(pair_tokens):
    """Every token of the pairs, ENGLISH, FAMILIES, NLTK's irregular forms, root+suffix and
    root+suffix+suffix combinations, seeded pseudo-words (y runs, doubled letters, digits)."""
    words = set(pair_tokens) | set(ENGLISH) | {w.lower() for f in FAMILIES for w in f}
    stemmer = PorterStemmer()
    words |= set(stemmer.pool) | set(stemmer.pool.values())
    for root in ROOTS:
        for suffix in SUFFIXES:
            words.add(root + suffix)
    rng = random.Random(20261209)
    for _ in range(1500):
        words.add(rng.choice(ROOTS) + rng.choice(SUFFIXES) + rng.choice(SUFFIXES))
    for _ in range(1500):
        n = rng.randint(1, 8)
        w = "".join(rng.choice("aeiouy" if rng.random() < 0.4 else "bcdlmnrstvwxyzll0123") for _ in range(n))
        words.add(w + (rng.choice(SUFFIXES) if rng.random() < 0.6 else ""))
    words = {w for w in words if w and all(c.isascii() and c.isalnum() for c in w) and w == w.lower()}
    return sorted(words), stemmer


def scored(scorer, scorer_stem, prediction, target):
    multi = isinstance(target, list)
    s = scorer.score_multi(target, prediction) if multi else scorer.score(target, prediction)
    t = scorer_stem.score_multi(target, prediction) if multi else scorer_stem.score(target, prediction)
    refs = [[r] for r in target] if multi else [[target]]
    return {"prediction": prediction, ("references" if multi else "reference"): target,
            **{k: v.fmeasure for k, v in s.items()}, **{k + "_stem": v.fmeasure for k, v in t.items()},
            "bleu": sacrebleu.corpus_bleu([prediction], refs).score}


def main():
    out_dir = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                           pathlib.Path(__file__).resolve().parent.parent / "tests/data/text_overlap")
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(20261207)
    types = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
    scorer = rouge_scorer.RougeScorer(types, use_stemmer=False)
    scorer_stem = rouge_scorer.RougeScorer(types, use_stemmer=True)
    predictions, references, lines = [], [], []
    for _ in range(400):
        reference = text(rng)
        prediction = text(rng, reference)
        lines.append(scored(scorer, scorer_stem, prediction, reference))
        predictions.append(prediction)
        references.append(reference)
    corpus = sacrebleu.corpus_bleu(predictions, [references]).score
    for _ in range(60):  # several references each
        refs = [text(rng) for _ in range(rng.randint(2, 4))]
        prediction = text(rng, rng.choice(refs))
        lines.append(scored(scorer, scorer_stem, prediction, refs))
    stem_rng = random.Random(20261208)  # the stemming lines: a Random of their own
    for _ in range(150):
        reference = stem_text(stem_rng)
        lines.append(scored(scorer, scorer_stem, stem_text(stem_rng, reference), reference))
    for _ in range(30):
        refs = [stem_text(stem_rng) for _ in range(stem_rng.randint(2, 4))]
        lines.append(scored(scorer, scorer_stem, stem_text(stem_rng, stem_rng.choice(refs)), refs))
    lines.append({"corpus_bleu": corpus})
    (out_dir / "pairs.jsonl").write_text("".join(json.dumps(l, ensure_ascii=False) + "\n" for l in lines),
                                         encoding="utf-8")

    pair_tokens = set()
    for l in lines[:-1]:
        for t in [l["prediction"], *(l["references"] if "references" in l else [l["reference"]])]:
            pair_tokens.update(tokenize.tokenize(t, None))
    words, stemmer = stem_vocabulary(pair_tokens)
    (out_dir / "porter.tsv").write_text("".join(f"{w}\t{stemmer.stem(w)}\n" for w in words), encoding="utf-8")
    print(f"wrote {out_dir}: {len(lines) - 1} pair lines (corpus BLEU {corpus:.4f} over the first 400), "
          f"{len(words)} stems")


if __name__ == "__main__":
    main()
