//===- TfmTraits.h - traits of tfm ops --------------------------*- C++ -*-===//
//
// Op traits that passes ask about instead of listing ops (see TfmBase.td).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_IR_TFMTRAITS_H
#define TFM_IR_TFMTRAITS_H

#include "mlir/IR/OpDefinition.h"

namespace mlir::OpTrait::tfm {

/// Row i of every result depends on row i of the position-varying operands
/// only (Tfm_PositionWise): the op may run on any subset of positions.
template <typename ConcreteType>
class PositionWise
    : public TraitBase<ConcreteType, PositionWise> {};

} // namespace mlir::OpTrait::tfm

#endif // TFM_IR_TFMTRAITS_H
