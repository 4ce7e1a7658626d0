import { Global, Module } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { Clock } from './clock';
import { ComputeQuery } from './compute.query';
import { OutboundPolicy } from './outbound-policy';
import { SecretBox } from './secret-box';
import { SecretResponseInterceptor } from './secret-response.interceptor';

@Global()
@Module({
  providers: [Clock, SecretBox, ComputeQuery, OutboundPolicy, { provide: APP_INTERCEPTOR, useClass: SecretResponseInterceptor }],
  exports: [Clock, SecretBox, ComputeQuery, OutboundPolicy],
})
export class CommonModule {}
