import { Module } from '@nestjs/common';
import { ActivityController, ActivityFeedQuery } from './activity.controller';

/** The organisation activity feed (read side). */
@Module({ controllers: [ActivityController], providers: [ActivityFeedQuery] })
export class ActivityModule {}
