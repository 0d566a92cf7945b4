// The Porter stemmer exactly as NLTK's PorterStemmer() computes it in its default mode
// (NLTK_EXTENSIONS): Porter's five steps with Martin Porter's and NLTK's amendments, the
// irregular-forms pool, and words of one or two letters left as they are. It is the stemmer
// rouge-score runs with use_stemmer=True, so ROUGE scores with stemming match that package's.
// Words are expected lowercase [a-z0-9]+ (what rouge-score's tokenizer yields); digits are
// consonants, as they are to NLTK.
#pragma once
#include <string>
#include <string_view>

namespace trident::train {

std::string porter_stem(std::string_view word);

}  // namespace trident::train
