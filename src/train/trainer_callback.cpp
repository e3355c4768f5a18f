#include "train/trainer_callback.h"

namespace strata {

const char* event_name(TrainerEvent e) {
  switch (e) {
    case TrainerEvent::TrainBegin: return "on_train_begin";
    case TrainerEvent::StepEnd: return "on_step_end";
    case TrainerEvent::EpochEnd: return "on_epoch_end";
    case TrainerEvent::Log: return "on_log";
    case TrainerEvent::Evaluate: return "on_evaluate";
    case TrainerEvent::Save: return "on_save";
    case TrainerEvent::TrainEnd: return "on_train_end";
  }
  return "";
}

}  // namespace strata
