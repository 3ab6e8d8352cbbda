/**
 * The numbers room: how numbers people write are read (libphonenumber-js metadata), which dialled strings are
 * emergency calls or extensions, and the form each trunk wants. Imports nothing of the project.
 */
export {
  normalise,
  nationalForm,
  isSupportedCountryCode,
  NumberFormatError,
  MAX_DIALLED_LENGTH,
  type NumberErrorCode,
} from './normalise.js';
export {
  classifyDialled,
  isEmergencyNumber,
  checkTrunkNumberFormat,
  numberForTrunk,
  BUILT_IN_EMERGENCY_NUMBERS,
  type Dialled,
  type DialPlan,
  type TrunkNumberFormat,
} from './dialled.js';
