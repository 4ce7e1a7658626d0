import { Global, Module } from '@nestjs/common';
import { Clock } from './clock';
import { ComputeQuery } from './compute.query';
import { SecretBox } from './secret-box';

@Global()
@Module({ providers: [Clock, SecretBox, ComputeQuery], exports: [Clock, SecretBox, ComputeQuery] })
export class CommonModule {}
