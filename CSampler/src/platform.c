// Whether this build samples: the one answer the Swift layers ask of the platform line.
#include "sw_platform.h"

int sw_platform_samples(void) { return SW_PLATFORM_SAMPLES; }
