// `sieve sample --draft IDS [--draft-probs FILE] [--verify match|rejection]`:
// speculative decoding's verification (sieve_verify) of one sequence's draft
// tokens over the n_draft + 1 positions of logits in --logits.
#pragma once

#include "commands.hpp"

#include <ostream>

namespace sieve_cli {

// --draft, --draft-probs, --verify.
void add_draft_flags(CLI::App& cmd, SampleOptions& o);

// True when the run verifies drafts: --draft, or a flag that only goes with
// it (which run_sample_verify then refuses).
bool verifies_drafts(const SampleOptions& o);

// The verification run: the accepted drafts and the emitted tokens (text or
// one JSON document). Refuses, as usage errors (exit 2), a combination of flags
// that does not fit together; a --logits or --draft-probs file of the wrong
// size is bad input (exit 3).
int run_sample_verify(const SampleOptions& o, std::ostream& out, std::ostream& err);

} // namespace sieve_cli
