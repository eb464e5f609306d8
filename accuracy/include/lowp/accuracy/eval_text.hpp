// The token ids `lowp eval --text` and lowp.eval(text=...) evaluate: one rule for both.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace lowp::accuracy {

// `text` through the model's tokenizer (tokenizer_for_model), BOS first when `bos` says so
// ("on", "off", or "auto": the tokenizer's add_bos, as llama.cpp's perplexity tool decides),
// and the id each window's first token is replaced with (-1: none). Throws lowp::Error for
// another `bos`, an empty text, or BOS asked of a tokenizer without one.
struct EvalText {
  std::vector<int> ids;
  int window_bos = -1;
};
EvalText eval_text_tokens(std::string_view text, const std::string& model_path, int vocab_size, std::string_view bos);

}  // namespace lowp::accuracy
