#ifndef TVLAB_FRAMEWORK_TRAIN_Z_LOSS_H_
#define TVLAB_FRAMEWORK_TRAIN_Z_LOSS_H_

// The output-logit z-loss (PaLM, Chowdhery et al. 2022; Wortsman et al.
// 2023; OLMo-core's z_loss_multiplier): train.z_loss = c > 0 adds
//   c * (1/N) * sum over the N rows whose target is not kIgnoreTarget of
//   (log Z_r)^2,   log Z_r = logsumexp of row r of the main head's logits,
// to the training loss. It pushes log Z towards 0, keeping the softmax's
// normaliser from drifting. The training loop adds it as the auxiliary loss
// "z_loss" (framework/autograd/auxiliary_outputs.h) with coefficient c, so it
// is logged (its value before c) as train_log.csv's `z_loss` column, the
// TensorBoard scalar auxiliary/z_loss and metrics.json's auxiliary_outputs,
// scaled under accumulation and data parallelism as the task's loss, and
// judged for divergence with it. c = 0 (the default): nothing is computed and
// no column appears. Extra heads of multi-token prediction are not penalised
// (the main head's logits only, as PaLM and OLMo-core).

#include <cstdint>
#include <vector>

#include "framework/autograd/var.h"
#include "framework/nn/module.h"
#include "framework/schema/experiment.pb.h"

namespace tvlab {

// The auxiliary output's name (at the root: no module path).
inline constexpr char kZLossName[] = "z_loss";

// Mean over counted rows of logsumexp(logits row)^2: logits (N, V), targets
// (N) host ids, rows whose target is `ignore_index` skipped; 0 (on the tape)
// when no row counts, as the cross-entropy's mean. Each row's log Z is taken
// against its own maximum (a device kernel, held constant: log Z does not
// depend on it), so no row underflows whatever the others hold. Composed of
// differentiable ops (Sub, Exp, MatMul, Log, Square, Mul, Sum); the gradient
// is 2 * lse_r * softmax(row r) / N on counted rows, 0 elsewhere.
Var ZLoss(const Var& logits, const std::vector<int32_t>& targets, int32_t ignore_index);

// The auxiliary outputs a training run logs: the model's (`model_declared`,
// Module::DeclaredAuxiliaryOutputs) and then, when train.z_loss > 0, the
// z-loss with its coefficient. REQUIRES: the model declares no root output
// named kZLossName.
std::vector<AuxiliaryDeclaration> TrainingAuxiliaryOutputs(const TrainSpec& train,
                                                           std::vector<AuxiliaryDeclaration> model_declared);

}  // namespace tvlab

#endif  // TVLAB_FRAMEWORK_TRAIN_Z_LOSS_H_
