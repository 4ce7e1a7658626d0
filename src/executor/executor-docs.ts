import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { ErrorBodyDto } from '../common/errors';

/**
 * The answers of an operation whose work on user input runs on the executor: 422 when that work ran out of its time
 * (counted from its start) or memory and was stopped. (429 when the organisation has too many such operations
 * waiting is among the standard errors.)
 */
export function ApiExecutorErrors() {
  return applyDecorators(
    ApiResponse({
      status: 422,
      description:
        'The input is too expensive to process: parsing, checking or matching it took longer than the per-task budget ' +
        '(EXECUTOR_TASK_TIMEOUT_MS, counted from when the work started) or more memory than allowed, and was stopped. ' +
        'Simplify the input; retrying the same input fails the same way.',
      type: ErrorBodyDto,
    }),
  );
}
