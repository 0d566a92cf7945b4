// Seeded input perturbations for robustness evaluation (eval.perturb). Each one is a pure
// function of (seed, perturbation, example index, text), so every rank and every layout sees
// the same perturbed examples:
//   typo            each ASCII letter, with probability rate, swapped with its neighbour,
//                   dropped, doubled or replaced by a random lowercase letter;
//   case            each ASCII letter's case flipped with probability rate;
//   whitespace      each space, with probability rate, widened to 2-3 spaces or a tab, and
//                   with probability rate/2 a space inserted inside a word;
//   shuffle_choices the choices of a multiple-choice example permuted (the gold index follows);
//   distractor      an irrelevant sentence put before the text.
// Perturbations never touch a text's last character or add trailing whitespace (a context's
// trailing space belongs to the continuation's tokenisation), nor the answers/choices
// (except their order).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trident::train {

inline constexpr std::string_view kPerturbations[] = {"typo", "case", "whitespace", "shuffle_choices", "distractor"};

// The perturbation names in s ("typo,case"; "" = none), each checked (ConfigError naming the bad one).
std::vector<std::string> parse_perturbations(const std::string& s);

struct PerturbSpec {
  std::string name;  // one of kPerturbations
  double rate = 0.05;
  uint64_t seed = 1234;
};

// The text perturbed as spec says for example `index` (shuffle_choices leaves text unchanged).
std::string perturb_text(const PerturbSpec& spec, uint64_t index, std::string_view text);

// shuffle_choices: a permutation of n choices for example `index`; order[i] = the original
// index of the choice shown at position i. Identity for the other perturbations.
std::vector<int> perturb_order(const PerturbSpec& spec, uint64_t index, int n);

}  // namespace trident::train
