// The evaluation's token ids of a text: one rule for `lowp eval` and lowp.eval.
#include "lowp/accuracy/eval_text.hpp"

#include "lowp/accuracy/tokenizer.hpp"
#include "lowp/numerics/error.hpp"

namespace lowp::accuracy {

EvalText eval_text_tokens(std::string_view text, const std::string& model_path, int vocab_size, std::string_view bos) {
  if (bos != "on" && bos != "off" && bos != "auto")
    throw Error("bos is on, off or auto, not '" + std::string(bos) + "'");
  if (text.empty()) throw Error("the text is empty");
  const Tokenizer t = tokenizer_for_model(model_path, vocab_size);
  const bool add_bos = bos == "auto" ? t.add_bos() : bos == "on";
  if (add_bos && t.bos() < 0) throw Error(model_path + ": --bos on (bos='on'), but the tokenizer has no BOS token");
  return {t.encode(text, add_bos, false), add_bos ? t.bos() : -1};
}

}  // namespace lowp::accuracy
