// Agreeing on a failure: when any rank of a group failed at some point of a collective piece of
// work, every rank throws the same error together, so no rank goes on into a collective the
// others never join. The error is the lowest failing rank's (a ConfigError stays one).
#pragma once
#include <mpi.h>

#include <exception>

namespace trident::dist {

// Collective over comm: returns when no rank passed an error; otherwise every rank throws the
// first failing rank's error (Error, or ConfigError for the user's mistakes), its message
// naming that rank on the others.
void throw_if_any_failed(MPI_Comm comm, std::exception_ptr error);

}  // namespace trident::dist
