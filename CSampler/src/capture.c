#include "sw_capture.h"
