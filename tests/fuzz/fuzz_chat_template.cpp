// A model's Jinja chat template (tokenizer_config.json's chat_template): parsed, rendered over a
// fixed conversation with and without the generation prompt, and split at the last assistant
// message as prep splits it.
#include "fuzz_target.hpp"
#include "trident/data/chat_template.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<trident::data::ChatMessage> kConversation = {
      {"system", " Be brief. "}, {"user", "Grüße {{ x }} 🌍"}, {"assistant", "<think>\nr\n</think>\n\nHi"},
      {"user", "again"}, {"assistant", ""}};
  trident::fuzz::expect_clean_rejection([&] {
    const trident::data::ChatTemplate tmpl(trident::fuzz::as_text(data, size), "fuzz",
                                           {{"bos_token", "<s>"}, {"eos_token", "</s>"}});
    (void)tmpl.render(kConversation, true);
    (void)tmpl.render(kConversation, false);
    (void)tmpl.render_document(kConversation);
  });
  return 0;
}
